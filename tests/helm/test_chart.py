"""The Helm chart, offline: `helm lint --strict`, `helm template` over a matrix of values, and every rendered
object validated strictly against the Kubernetes API's JSON schemas (kubeconform, no network).

helm, kubeconform and the schemas are built by `make tools` (deploy/k8s/tools.sh) into a cache outside the clone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "authbench"
DASHBOARD = CHART / "dashboards" / "authbench.json"
CACHE = Path(os.environ.get("AUTHBENCH_TOOLS_CACHE", "/opt/authbench-cache"))
HELM, KUBECONFORM = CACHE / "bin" / "helm", CACHE / "bin" / "kubeconform"
KUBERNETES_VERSION = "1.37.0"
SCHEMAS = (f"{CACHE}/schemas/" "{{ .NormalizedKubernetesVersion }}-standalone{{ .StrictSuffix }}/"
           "{{ .ResourceKind }}{{ .KindSuffix }}.json")
TIMEOUT = 60
RECOMMENDED_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                      "app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by")
PASSWORD = "s3cret-do-not-leak"

LAB = ["--set", "lab.enabled=true", "--set", "plan.patterns=2x5"]
OWN_TARGET = ["--set", "target=https://sp.example.org/secure/", "--set", "accounts.existingSecret=my-accounts",
              "--set-string", "caBundle.pem=-----BEGIN CERTIFICATE-----", "--set", "workers.count=5",
              "--set-json", "plan.maxErrorPct=1.5"]
LDAP = ["--set", "target=ldap://ldap.example.org:389", "--set", "accounts.template=user{000..099}",
        "--set-json", 'journey.extraArgs=["--bind-dn","uid={user},ou=people,dc=example,dc=org"]']
OWN_JOURNEY = ["--set", "target=https://sp.example.org/secure/", "--set", "accounts.template=user{000..099}",
               "--set-file", f"journey.file={ROOT / 'locustfiles' / 'sso_then_page.py'}",
               "--set", "journey.userClass=SSOThenPage"]
CLIENT_SECRET = "rp-s3cret-do-not-leak"
OIDC = ["--set", "target=oidc+https://idp.example.org/realms/lab", "--set", "oidc.clientId=authbench",
        "--set", "oidc.clientSecret.existingSecret=rp-secret", "--set", "oidc.clientSecret.key=secret",
        "--set", "accounts.template=user{000..099}", "--set", "oidc.grant=refresh",
        "--set", "oidc.validateIdToken=true"]
OIDC_CLIENT_CREDENTIALS = ["--set", "target=oidc+https://idp.example.org", "--set", "oidc.clientId=batch",
                           "--set", f"oidc.clientSecret.value={CLIENT_SECRET}",
                           "--set", "oidc.grant=client-credentials"]
MATRIX = {
    "lab": LAB,
    "oidc": OIDC,
    "oidc-client-credentials": OIDC_CLIENT_CREDENTIALS,
    "oidc-web": ["--set", "mode=web", "--set", "web.auth.existingSecret=web-login",
                 "--set", f"oidc.clientSecret.value={CLIENT_SECRET}"],
    "ldap": LDAP,
    "own-journey": OWN_JOURNEY,
    "own-target": OWN_TARGET,
    "inline-accounts": ["--set", "target=https://sp.example.org/secure/",
                        "--set", f"accounts.csv=user\\,password\nalice\\,{PASSWORD}\n"],
    "template-accounts-no-volume": ["--set", "target=https://sp.example.org/secure/", "--set",
                                    "accounts.template=user{000..099}", "--set", "results.persistence.enabled=false"],
    "compare-lab": [*LAB, "--set", "mode=compare", "--set", "lab.backends={stateless,local}"],
    "compare-targets": ["--set", "mode=compare", "--set", "accounts.template=u{0..9}",
                        "--set", "compare.targets[0].name=a", "--set", "compare.targets[0].url=https://a/secure/",
                        "--set", "compare.targets[0].lb=https://a", "--set", "compare.targets[0].nodes={https://n1,https://n2}"],
    "web": ["--set", "mode=web", "--set", "web.auth.existingSecret=web-login", "--set", "web.ingress.enabled=true",
            "--set", "web.ingress.tlsSecret=tls", "--set", "web.ingress.className=nginx"],
    "monitoring": [*LAB, "--set", "monitoring.serviceMonitor.enabled=true", "--set",
                   "monitoring.grafanaDashboard.enabled=true",
                   "--set-string", "monitoring.serviceMonitor.labels.release=prometheus"],
}
# Kinds of other projects' CRDs: no Kubernetes schema exists for them offline, so kubeconform is told to skip
# exactly these (never "ignore every missing schema"); their shape is asserted by the tests below instead.
CRD_KINDS = ("ServiceMonitor",)


def tool(path: Path) -> str:
    if not path.exists():
        pytest.fail(f"{path} is missing: run 'make tools' (deploy/k8s/tools.sh builds it)")
    return str(path)


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([tool(HELM), *args], capture_output=True, text=True, timeout=TIMEOUT, check=False)


def render(values: list[str]) -> tuple[str, list[dict]]:
    result = helm("template", "bench", str(CHART), "--namespace", "load", *values)
    assert result.returncode == 0, result.stderr
    return result.stdout, [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def find(objects: list[dict], kind: str, suffix: str) -> dict:
    (match,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    return match


def container_args(job: dict) -> list[str]:
    return job["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_lint_strict(case):
    result = helm("lint", "--strict", str(CHART), *MATRIX[case])
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_every_object_is_valid_kubernetes_offline(case):
    text, objects = render(MATRIX[case])
    # no network namespace of its own unless unshare is there: the schemas are local files either way
    prefix = ["unshare", "-n"] if shutil.which("unshare") and os.geteuid() == 0 else []
    result = subprocess.run([*prefix, tool(KUBECONFORM), "-strict", "-summary", "-kubernetes-version",
                             KUBERNETES_VERSION, "-schema-location", SCHEMAS, "-skip", ",".join(CRD_KINDS), "-"],
                            input=text, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = len([o for o in objects if o["kind"] in CRD_KINDS])
    assert f"Valid: {len(objects) - skipped}, Invalid: 0, Errors: 0, Skipped: {skipped}" in result.stdout
    for item in objects:
        assert set(RECOMMENDED_LABELS) <= set(item["metadata"]["labels"]), item["metadata"]["name"]


def test_master_job_runs_once_and_its_status_is_the_verdict():
    _, objects = render(OWN_TARGET)
    job = find(objects, "Job", "-master")
    assert (job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"]) == (0, 7200)
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    args = container_args(job)
    assert args[args.index("--expect-workers") + 1] == "5" and args[args.index("--max-error-pct") + 1] == "1.5"
    assert args[args.index("--ca-bundle") + 1] == "/etc/authbench/ca/ca.crt"
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "exit $status" in script and "authbench report" in script
    workers = find(objects, "Job", "-workers")
    assert workers["spec"]["completions"] == workers["spec"]["parallelism"] == 5
    worker_args = container_args(workers)
    service = find(objects, "Service", "-master")
    assert worker_args[worker_args.index("--master-host") + 1] == service["metadata"]["name"]
    ports = {port["name"] for port in service["spec"]["ports"]}
    assert ports == {"master", "metrics"}


def _prepared(args: list[str]):
    """What authbench makes of a pod's arguments: its parser and the run path's preparation, no load."""
    from authbench.cli import build_parser
    from authbench.cli.run import prepare

    return prepare(build_parser().parse_args(args))


def test_worker_pods_run_an_ldap_plan_as_workers():
    from authbench.prepared import Master, Worker

    _, objects = render(LDAP)
    worker = _prepared(container_args(find(objects, "Job", "-workers")))
    master = _prepared(container_args(find(objects, "Job", "-master")))
    assert (worker.kind.name, master.kind.name) == ("ldap", "ldap")
    assert isinstance(worker.settings.role, Worker) and worker.settings.role.master_host == "bench-authbench-master"
    assert isinstance(master.settings.role, Master) and master.settings.role.expect == 2
    assert worker.journey.settings.dn_template == "uid={user},ou=people,dc=example,dc=org"


def test_your_own_journey_runs_from_a_config_map_in_every_load_pod():
    _, objects = render(OWN_JOURNEY)
    source = find(objects, "ConfigMap", "-journey")["data"]["journey.py"]
    assert source == (ROOT / "locustfiles" / "sso_then_page.py").read_text()
    for job in (find(objects, "Job", "-master"), find(objects, "Job", "-workers")):
        args = container_args(job)
        path = args[args.index("--locustfile") + 1]
        assert args[args.index("--user-class") + 1] == "SSOThenPage"
        mounts = job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        assert path.startswith(next(m["mountPath"] for m in mounts if m["name"] == "journey") + "/")


def test_lab_mode_points_the_load_at_the_lab_service():
    _, objects = render(LAB)
    lab_service = find(objects, "Service", "-lab")["metadata"]["name"]
    args = container_args(find(objects, "Job", "-master"))
    sp_port = 17000 + 400 + 3  # stateless is the lab's fourth cluster
    assert args[args.index("--target") + 1] == f"https://{lab_service}:{sp_port}/secure/"
    assert args[args.index("--ca-bundle") + 1] == "/etc/authbench/lab-ca/ca.crt"
    assert args[args.index("--accounts-template") + 1] == "user{000..199}"
    lab_args = find(objects, "Deployment", "-lab")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert lab_args[lab_args.index("--public-host") + 1] == lab_service
    assert {p["port"] for p in find(objects, "Service", "-lab")["spec"]["ports"]} == {17400, 17401, 17402, sp_port}
    # the load pods see only the CA's certificate, never its key
    volumes = find(objects, "Job", "-master")["spec"]["template"]["spec"]["volumes"]
    assert [v["secret"]["items"] for v in volumes if v["name"] == "lab-ca"] == [[{"key": "ca.crt", "path": "ca.crt"}]]


def test_passwords_live_only_in_a_secret():
    _, objects = render(MATRIX["inline-accounts"])
    holders = [o["kind"] for o in objects if PASSWORD in yaml.safe_dump(o)]
    assert holders == ["Secret"]
    assert find(objects, "Secret", "-accounts")["stringData"]["accounts.csv"].endswith(f"alice,{PASSWORD}\n")


def test_an_oidc_target_reads_its_client_secret_from_a_secret_file_in_every_load_pod():
    from authbench.cli import build_parser

    for values, secret_name, key in ((OIDC, "rp-secret", "secret"),
                                     (OIDC_CLIENT_CREDENTIALS, "bench-authbench-oidc", "client-secret")):
        text, objects = render(values)
        for job in (find(objects, "Job", "-master"), find(objects, "Job", "-workers")):
            args = container_args(job)
            build_parser().parse_args(args)  # authbench run's own options, each one
            assert args[args.index("--client-id") + 1] in ("authbench", "batch") and "--sp" not in args
            path = args[args.index("--client-secret-file") + 1]
            mounts = job["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
            assert path == next(m["mountPath"] for m in mounts if m["name"] == "oidc-client") + "/client-secret"
            (volume,) = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "oidc-client"]
            assert volume["secret"]["secretName"] == secret_name
            assert volume["secret"]["items"] == [{"key": key, "path": "client-secret"}]
    args = container_args(find(objects, "Job", "-master"))
    assert args[args.index("--grant") + 1] == "client-credentials" and "--accounts-template" not in args
    assert [o["kind"] for o in objects if CLIENT_SECRET in yaml.safe_dump(o)] == ["Secret"]
    assert find(objects, "Secret", "-oidc")["stringData"] == {"client-secret": CLIENT_SECRET}
    _, web = render(MATRIX["oidc-web"])  # the UI's form names the same file
    mounts = find(web, "Deployment", "-web")["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "oidc-client", "mountPath": "/etc/authbench/oidc", "readOnly": True} in mounts
    result = helm("template", "bench", str(CHART), *OIDC, "--set", "oidc.clientId=")
    assert result.returncode != 0 and "an oidc+ target needs oidc.clientId" in result.stderr


def test_compare_mode_takes_every_lab_cluster_and_no_workers():
    _, objects = render(MATRIX["compare-lab"])
    args = container_args(find(objects, "Job", "-master"))
    assert args[0] == "compare"
    assert [args[i + 1].split("=")[0] for i, a in enumerate(args) if a == "--target"] == ["stateless", "local"]
    assert len([a for a in args if a == "--node"]) == 4
    assert not [o for o in objects if o["metadata"]["name"].endswith("-workers")]


def test_web_mode_needs_a_login_secret():
    result = helm("template", "bench", str(CHART), "--set", "mode=web")
    assert result.returncode != 0 and "web.auth.existingSecret" in result.stderr
    _, objects = render(MATRIX["web"])
    args = container_args(find(objects, "Deployment", "-web"))
    assert "--web-login" in args and args[args.index("--web-auth-file") + 1] == "/etc/authbench/web-auth/auth"
    assert find(objects, "Ingress", "-web")["spec"]["tls"][0]["secretName"] == "tls"
    # the UI answers only the names it is reached by (421 otherwise): its Service's and the Ingress host
    allowed = [args[i + 1] for i, a in enumerate(args) if a == "--web-allowed-host"]
    assert allowed == ["bench-authbench-web", "bench-authbench-web.load", "bench-authbench-web.load.svc",
                       "bench-authbench-web.load.svc.cluster.local", "authbench.example.org"]
    # plans load loopback, the in-cluster lab, `target`'s host and web.allowTargets, nothing else (docs/web.md)
    _, objects = render([*MATRIX["web"], "--set", "lab.enabled=true", "--set", "target=https://sp.example.org:8443/x",
                         "--set", "web.allowTargets={idp.example.org}"])
    args = container_args(find(objects, "Deployment", "-web"))
    assert [args[i + 1] for i, a in enumerate(args) if a == "--allow-target"] == [
        "idp.example.org", "bench-authbench-lab", "sp.example.org"]


def test_monitoring_scrapes_the_master_and_ships_the_dashboard():
    _, objects = render(MATRIX["monitoring"])
    monitor = find(objects, "ServiceMonitor", "-master")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    service = find(objects, "Service", "-master")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    assert "metrics" in [p["name"] for p in service["spec"]["ports"]]
    dashboard = find(objects, "ConfigMap", "-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["authbench.json"]) == json.loads(DASHBOARD.read_text())
    _, plain = render(LAB)
    assert not [o for o in plain if o["kind"] == "ServiceMonitor" or o["metadata"]["name"].endswith("-dashboard")]


@pytest.mark.parametrize(("values", "message"), [
    (["--set", "workers.count=notanint"], "at '/workers/count': got string, want integer"),
    (["--set", "plan.patterns=fast"], "at '/plan/patterns'"),
    (["--set", "lab.backends={nosuch}"], "at '/lab/backends/0'"),
    (["--set", "surprise=1"], "surprise"),
    (["--set-json", "monitoring.serviceMonitor.interval=5"], "at '/monitoring/serviceMonitor/interval'"),
    (["--set", "monitoring.grafanaDashboard.enable=true"], "enable"),
    (["--set", "web.allowedHosts={bad host}"], "at '/web/allowedHosts/0'"),
    (["--set", "oidc.grant=implicit"], "at '/oidc/grant'"),
    (["--set", "target=oidc+ftp://idp"], "at '/target'"),
    (["--set", "oidc.clientSecret.secret=x"], "secret"),
])
def test_schema_rejects_wrong_values(values, message):
    result = helm("template", "bench", str(CHART), *LAB, *values)
    assert result.returncode != 0 and message in result.stderr, result.stderr
