"""The start form's fields by the names the page shows, for errors that speak of the form, not of CLI flags.

The form is checked by `authbench run`'s own parser (cli/web_form.py), whose messages name options
(`--max-rate`); a person who typed into "Max rate" reads that field's name instead.
"""

from __future__ import annotations

import re

# option -> the label of its field on the page (static/index.html)
FIELD_LABELS = {
    "--target": "Target", "--pattern": "Patterns", "--warmup": "Warm-up", "--repeat": "Repetitions",
    "--cell-time-limit": "Time limit per repetition", "--rate": "Rate", "--duration": "Duration",
    "--levels": "Levels", "--slo": "SLO", "--start-rate": "Start rate", "--max-rate": "Max rate",
    "--growth": "Growth", "--precision": "Precision", "--step-duration": "Step duration",
    "--step-warmup": "Step warm-up", "--max-users": "Journeys in flight at most", "--expect": "Page contains",
    "--expect-regex": "Page matches",
    "--expect-status": "Page status", "--accounts-template": "Accounts template", "--password-rule": "Password rule",
    "--ca-bundle": "CA bundle", "--fault": "Fault plan", "--pace": "Pace", "--accounts-csv": "Accounts CSV",
    "--client-id": "Client ID", "--client-secret": "Client secret", "--grant": "Grant", "--scope": "Scope",
    "--redirect-uri": "Redirect URI",
}
_OPTION = re.compile(r"--[a-z][a-z0-9-]*")
_ARGUMENT = re.compile(r"argument (--[a-z][a-z0-9-]*)(?:/-\w+)?: ")  # argparse's "argument --growth: invalid …"


def name_fields(message: str) -> str:
    """`message` with every option that is a form field replaced by the field's name (others stay)."""
    message = _ARGUMENT.sub(lambda m: f"{FIELD_LABELS[m[1]]}: " if m[1] in FIELD_LABELS else m[0], message)
    return _OPTION.sub(lambda m: FIELD_LABELS.get(m[0], m[0]), message)
