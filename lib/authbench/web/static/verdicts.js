// The verdict panel (results/verdicts.py computes it; summary.json, the console and the report show the same):
// ✓/✗ (Test 4: ○/△/×) for every check, with the figure that decided it. Updated as cells end.
"use strict";

function showVerdicts(verdicts) {
  const panel = document.getElementById("verdicts");
  const checks = verdicts && verdicts.checks ? verdicts.checks : [];
  panel.hidden = checks.length === 0;
  if (!checks.length) return;
  const head = document.getElementById("verdicts-head");
  const verdict = { true: "all passed", false: "FAILED", null: "nothing to judge" }[String(verdicts.passed)];
  head.textContent = `Verdicts: ${verdict}`;
  panel.className = `verdicts ${verdicts.passed === false ? "failed" : verdicts.passed ? "passed" : ""}`;
  const rows = checks.map((check) => {
    const tr = document.createElement("tr");
    tr.dataset.check = check.check;
    tr.className = check.passed === false ? "fail" : check.passed ? "pass" : "info";
    for (const [text, col] of [[check.mark, "mark"], [check.title, "title"], [check.figure, "figure"]]) {
      const td = document.createElement("td");
      td.textContent = text;
      td.dataset.col = col;
      tr.appendChild(td);
    }
    return tr;
  });
  document.querySelector("#verdicts tbody").replaceChildren(...rows);
}
