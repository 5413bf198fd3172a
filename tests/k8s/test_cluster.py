"""The chart on a real Kubernetes cluster started on this machine (deploy/k8s/cluster.sh): images built
from a Debian base and loaded into containerd, `helm install` with the in-cluster lab, the master Job's
verdict read with `kubectl wait`, the results copied out of their volume, and a teardown that leaves nothing.

Pods live on a private bridge with no route out and no NAT: the load goes only to the lab pod.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "authbench"
SCRIPTS = ROOT / "deploy" / "k8s"
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
IMAGE_BUILD_TIMEOUT = 1800  # a cold base image and pip install of the dependencies
CLUSTER_TIMEOUT = 300
JOB_TIMEOUT_S = 420
COMMAND_TIMEOUT = 120
STORAGE_CLASS = "authbench-test"
RUN_AS = 10001  # the image's user, owner of the results volume
PATTERN, USERS, RUNS = "2x5", 2, 5
LAB_SP_PORT = 17000 + 400 + 3  # the chart's default lab: base port 17000, the stateless cluster's SP
IMAGES = ["--set", "image.repository=authbench", "--set", "image.tag=ci", "--set", "image.pullPolicy=Never",
          "--set", "lab.image.repository=authbench-lab", "--set", "lab.image.tag=ci",
          "--set", "lab.image.pullPolicy=Never"]
SMALL = ["--set", "plan.warmup=0", "--set", "plan.repeat=1", "--set", "master.activeDeadlineSeconds=400"]


class Cluster:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.rules_before = 0
        self.env = {**os.environ, "KUBECONFIG": str(workdir / "pki" / "admin.kubeconfig"),
                    "PATH": f"{CACHE / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def run(self, *command: str, timeout: float = COMMAND_TIMEOUT, stdin: str | None = None,
            check: bool = True, binary: bool = False) -> subprocess.CompletedProcess:
        result = subprocess.run(command, env=self.env, capture_output=True, text=not binary, input=stdin,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited {result.returncode}: {result.stderr!r}")
        return result

    def kubectl(self, *args: str, **kwargs) -> str:
        return self.run("kubectl", *args, **kwargs).stdout

    def diagnose(self) -> str:
        """Pods, events and every pod's log tail, for an assertion message."""
        parts = [self.kubectl("get", "pods,jobs", "-o", "wide", check=False),
                 self.kubectl("get", "events", "--sort-by=.lastTimestamp", check=False)[-3000:]]
        for pod in self.kubectl("get", "pods", "-o", "name", check=False).split():
            parts.append(f"--- {pod}\n" + self.kubectl("logs", pod, "--all-containers", "--tail=15", check=False))
        return "\n".join(parts)

    def wait_job(self, job: str, condition: str) -> bool:
        """Whether the Job reached `condition` (complete or failed) within the timeout."""
        result = self.run("kubectl", "wait", f"--for=condition={condition}", f"job/{job}",
                          f"--timeout={JOB_TIMEOUT_S}s", timeout=JOB_TIMEOUT_S + 30, check=False)
        return result.returncode == 0


@pytest.fixture(scope="module")
def cluster():
    workdir = Path(tempfile.mkdtemp(prefix="abk8s-", dir="/tmp"))
    images = subprocess.run([str(SCRIPTS / "images.sh"), str(workdir)], capture_output=True, text=True,
                            timeout=IMAGE_BUILD_TIMEOUT, check=False)
    assert images.returncode == 0, images.stderr[-3000:]
    handle = Cluster(workdir)
    handle.rules_before = _kube_rules()
    try:
        up = subprocess.run([str(SCRIPTS / "cluster.sh"), "up", str(workdir)], capture_output=True, text=True,
                            timeout=CLUSTER_TIMEOUT, check=False)
        assert up.returncode == 0, up.stderr[-3000:]
        volume = workdir / "results-volume"
        volume.mkdir()
        os.chown(volume, RUN_AS, RUN_AS)
        handle.kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "authbench-test-results"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": STORAGE_CLASS, "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": str(volume), "type": "Directory"}}}))
        yield handle
    finally:
        subprocess.run([str(SCRIPTS / "cluster.sh"), "down", str(workdir)], capture_output=True,
                       timeout=CLUSTER_TIMEOUT, check=False)
        if f" {workdir}/" not in Path("/proc/mounts").read_text():  # never delete through a mount
            shutil.rmtree(workdir, ignore_errors=True)


def exit_code(cluster: Cluster, job: str) -> int:
    return int(cluster.kubectl("get", "pods", "-l", f"job-name={job}", "-o",
                               "jsonpath={.items[0].status.containerStatuses[0].state.terminated.exitCode}"))


def test_a_passing_run_completes_with_exact_counts_and_its_results_survive(cluster):
    cluster.run("helm", "install", "pass", str(CHART), *IMAGES, *SMALL, "--set", "lab.enabled=true",
                "--set", f"results.persistence.storageClass={STORAGE_CLASS}",
                "--set", "lab.users=20", "--set", f"plan.patterns={PATTERN}", "--set", "workers.count=2",
                "--set-json", "plan.maxErrorPct=0")
    assert cluster.wait_job("pass-authbench-master", "complete"), cluster.diagnose()
    assert exit_code(cluster, "pass-authbench-master") == 0
    log = cluster.kubectl("logs", "job/pass-authbench-master")
    assert "waiting for 2 worker(s)" in log and "authbench: exit status 0" in log
    assert cluster.wait_job("pass-authbench-workers", "complete"), cluster.diagnose()

    # the documented copy-out: tar through the reader pod that keeps the volume mounted
    cluster.run("kubectl", "rollout", "status", "deploy/pass-authbench-results", "--timeout=120s", timeout=150)
    archive = cluster.run("kubectl", "exec", "deploy/pass-authbench-results", "--", "tar", "cf", "-", "-C",
                          "/results", ".", binary=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        copied = {member.name.removeprefix("./") for member in tar}
        summary = json.loads(tar.extractfile("./pass-1/summary.json").read())
    cell = summary["cells"][0]["summary"]
    assert (cell["tests"], cell["errors"]) == (USERS * RUNS, 0)
    assert summary["plan"]["patterns"] == [PATTERN]
    assert {"pass-1/samples.csv", "pass-1/report.html", "pass-1/report.md"} <= copied
    # the same files are on the volume itself, which outlives the pods
    samples = (cluster.workdir / "results-volume" / "pass-1" / "samples.csv").read_text().splitlines()
    assert len(samples) == 1 + USERS * RUNS and all(",ok," in line for line in samples[1:])
    assert "pw-user" not in "\n".join(samples) + json.dumps(summary)


def test_a_failing_run_gives_the_failed_condition_and_exit_3(cluster):
    """One account in two has a wrong password: the run completes, fails --max-error-pct, the Job fails."""
    lab_ca = cluster.kubectl("get", "secret", "pass-authbench-lab-ca", "-o", "jsonpath={.data.ca\\.crt}")
    cluster.kubectl("create", "configmap", "lab-ca", f"--from-literal=ca.crt={_b64decode(lab_ca)}")
    accounts = cluster.workdir / "accounts.csv"
    accounts.write_text("user,password\nuser000,pw-user000\nuser001,wrong\n")
    cluster.run("helm", "install", "fail", str(CHART), *IMAGES, *SMALL,
                "--set", f"target=https://pass-authbench-lab:{LAB_SP_PORT}/secure/",
                "--set", "caBundle.existingConfigMap=lab-ca", "--set-file", f"accounts.csv={accounts}",
                "--set", "results.persistence.existingClaim=pass-authbench-results",
                "--set", "plan.patterns=1x4", "--set", "workers.count=1", "--set-json", "plan.maxErrorPct=10",
                "--set", "results.reader.enabled=false")
    assert cluster.wait_job("fail-authbench-master", "failed"), cluster.diagnose()
    assert exit_code(cluster, "fail-authbench-master") == 3
    log = cluster.kubectl("logs", "job/fail-authbench-master")
    assert "FAILED: 50.00% of 4 measured journeys failed" in log
    assert "wrong" not in log and "pw-user000" not in log
    assert (cluster.workdir / "results-volume" / "fail-1" / "report.html").exists()  # the report, even so


# Run inside the results reader's pod (the authbench image has Python): GET a URL of the web UI by its Service
# name, with or without the login and with a given Host header; prints the status code. A refused connection
# is tried again for a while: a Service answers only once kube-proxy has the ready pod's endpoint, a moment
# after `rollout status` returns (a cold cluster refused the first GET once).
PROBE = """
import base64, sys, time, urllib.error, urllib.request
url, auth, host = sys.argv[1:4]
request = urllib.request.Request(url)
if auth:
    request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
if host:
    request.add_header("Host", host)
deadline = time.monotonic() + 30
while True:
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            print(answer.status, answer.read(200).decode(errors="replace"))
    except urllib.error.HTTPError as error:
        print(error.code)
    except urllib.error.URLError:
        if time.monotonic() > deadline:
            raise
        time.sleep(1)
        continue
    break
"""


def test_the_web_ui_runs_behind_its_login_and_answers_by_its_service_name(cluster):
    refused = cluster.run("helm", "install", "nologin", str(CHART), *IMAGES, "--set", "mode=web", check=False)
    assert refused.returncode != 0 and "web.auth.existingSecret" in refused.stderr
    login = f"admin:{secrets.token_urlsafe(12)}"
    cluster.kubectl("create", "secret", "generic", "web-login", f"--from-literal=auth={login}")
    cluster.run("helm", "install", "web", str(CHART), *IMAGES, "--set", "mode=web",
                "--set", "web.auth.existingSecret=web-login", "--set", "results.reader.enabled=false",
                "--set", "results.persistence.existingClaim=pass-authbench-results")
    rollout = cluster.run("kubectl", "rollout", "status", "deploy/web-authbench-web", "--timeout=180s",
                          timeout=200, check=False)
    assert rollout.returncode == 0, cluster.diagnose()

    def get(path: str, auth: str = "", host: str = "") -> str:
        url = f"http://web-authbench-web:8089{path}"
        return cluster.kubectl("exec", "deploy/pass-authbench-results", "--", "python3", "-c", PROBE, url, auth,
                               host).strip()

    assert get("/authbench/api/state") == "401"  # no login, no UI
    assert get("/authbench/api/state", "admin:wrong") == "401"
    status, _, body = get("/authbench/api/state", login).partition(" ")
    assert status == "200" and '"busy": false' in body  # reached by its Service's name, behind the login
    assert get("/authbench/api/state", login, host="attacker.example") == "421"  # DNS rebinding refused
    assert login.split(":", 1)[1] not in cluster.kubectl("logs", "deploy/web-authbench-web")


def test_teardown_leaves_no_process_mount_or_bridge(cluster):
    for release in ("web", "pass", "fail"):
        cluster.run("helm", "uninstall", release, "--wait", "--timeout=120s", timeout=150)
    down = subprocess.run([str(SCRIPTS / "cluster.sh"), "down", str(cluster.workdir)], capture_output=True,
                          text=True, timeout=CLUSTER_TIMEOUT, check=False)
    assert down.returncode == 0, down.stderr
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_names(pid, cluster.workdir)]
    assert not leftovers
    assert f" {cluster.workdir}/" not in Path("/proc/mounts").read_text()
    assert subprocess.run(["ip", "link", "show", "abk8s0"], capture_output=True, check=False).returncode != 0
    listening = subprocess.run(["ss", "-Hltn", "sport = :6443 or sport = :2379 or sport = :10250"],
                               capture_output=True, text=True, check=False).stdout
    assert not listening.strip()
    assert _kube_rules() == cluster.rules_before  # kube-proxy's and kubelet's chains are gone


def _kube_rules() -> int:
    dumps = [subprocess.run([tool], capture_output=True, text=True, check=False).stdout
             for tool in ("iptables-save", "ip6tables-save")]
    return sum(dump.count("KUBE-") for dump in dumps)


def _b64decode(text: str) -> str:
    import base64

    return base64.b64decode(text).decode()


def _cmdline_names(pid: str, workdir: Path) -> bool:
    try:
        return f"{workdir}/".encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
