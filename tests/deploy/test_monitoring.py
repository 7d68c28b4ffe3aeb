"""deploy/components/monitoring: the optional kustomize Component with ServiceMonitors, the alerts
(PrometheusRule) and the Grafana dashboard (ConfigMap).

Checked offline, as the rest of deploy/ is: the Component renders; the ConfigMap is valid for every Kubernetes
release kubernetes-validate knows; the PrometheusRule and ServiceMonitors are valid for the prometheus-operator
API (the pydantic models generated from its CRDs by cloudcoil-models-prometheus-operator, pinned as a test
dependency, with unknown fields refused and no type coerced, as the API server's strict field validation does);
every PromQL expression parses; and every metric an alert or a panel uses is one the code exports, read from the
programs' own registries so the check stays true as metrics are added or renamed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prometheus_client
import promql_parser
import pydantic
import pytest
import yaml
from cloudcoil.models.prometheus_operator import v1 as prometheus_operator

from tests.deploy import kustomize, schemas

Obj = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = ROOT / "deploy" / "components" / "monitoring"
DASHBOARD_KEY = "cluster-object-set.json"

# Metrics the pending alerts and panels need and the code does not export yet (docs/admin.md section 7 describes
# each). They may appear only in the rule group and the dashboard row marked as pending; everything else must be
# exported now. Once the code exports one, the check below is satisfied by the code and the entry can go.
PENDING: set[str] = set()  # every metric used is exported today
PENDING_GROUP = "cluster-object-set.pending-metrics"
PENDING_ROW = "Rollouts (pending metrics"

# What Grafana substitutes before a query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h"}


# ---- what the code exports ------------------------------------------------------------------------------------

def _sample_names(family: prometheus_client.Metric) -> set[str]:
    """The series names a metric family produces in the text format (what PromQL selects)."""
    name, kind = family.name, family.type
    if kind == "counter":
        return {f"{name}_total", f"{name}_created"}
    if kind == "histogram":
        return {f"{name}_bucket", f"{name}_sum", f"{name}_count", f"{name}_created"}
    if kind == "summary":
        return {name, f"{name}_sum", f"{name}_count", f"{name}_created"}
    if kind == "info":
        return {f"{name}_info"}
    return {name}


def exported() -> dict[str, prometheus_client.Metric]:
    """Every series name the reconciler and the webhook export, each with its metric family."""
    # Importing the webhook's modules registers its metrics in the default registry, wherever they are defined.
    import webhook.app
    import webhook.metrics  # noqa: F401
    from reconciler.metrics import Metrics

    out: dict[str, prometheus_client.Metric] = {}
    for registry in (Metrics().registry, prometheus_client.REGISTRY):
        for family in registry.collect():
            if family.name.startswith("cos_"):
                out.update(dict.fromkeys(_sample_names(family), family))
    return out


def test_exported_names_are_read_from_the_registries() -> None:
    """The reference list is real: known series of both programs are in it, made-up ones are not."""
    names = exported()
    for name in ("cos_leader", "cos_reconciles_total", "cos_reconcile_duration_seconds_bucket",
                 "cos_webhook_admission_requests_total", "cos_webhook_admission_duration_seconds_count",
                 "cos_revision_state", "cos_rollout_duration_seconds_bucket"):
        assert name in names
    assert "cos_reconciles" not in names and "cos_leader_total" not in names


# ---- the rendered Component -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def objs() -> list[Obj]:
    return kustomize.render(COMPONENT)


def one(objs: list[Obj], kind: str, name: str) -> Obj:
    hits = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(hits) == 1, f"expected one {kind} {name}"
    return hits[0]


def test_component_renders_the_monitoring_objects(objs: list[Obj]) -> None:
    assert yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())["kind"] == "Component"
    assert sorted((o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs) == [
        ("ConfigMap", "olmv1-system", "cos-dashboard"),
        ("PrometheusRule", "olmv1-system", "cos-alerts"),
        ("ServiceMonitor", "olmv1-system", "cos-reconciler"),
        ("ServiceMonitor", "olmv1-system", "cos-webhook"),
    ]
    cm = one(objs, "ConfigMap", "cos-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert list(cm["data"]) == [DASHBOARD_KEY]


def test_service_monitors_select_the_metrics_services_of_deploy(objs: list[Obj]) -> None:
    """Each ServiceMonitor selects exactly the Service of deploy/ that serves /metrics, on a port it names."""
    services = [o for o in kustomize.render(ROOT / "deploy") if o["kind"] == "Service"]
    expected = {"cos-reconciler": ("cos-reconciler-metrics", "metrics", "http"),
                "cos-webhook": ("cos-webhook", "https", "https")}
    for name, (service, port, scheme) in expected.items():
        sm = one(objs, "ServiceMonitor", name)
        selector = sm["spec"]["selector"]["matchLabels"]
        hits = [s for s in services if selector.items() <= s["metadata"]["labels"].items()]
        assert [s["metadata"]["name"] for s in hits] == [service]
        assert port in [p["name"] for p in hits[0]["spec"]["ports"]]
        (endpoint,) = sm["spec"]["endpoints"]
        assert (endpoint["port"], endpoint["path"], endpoint["scheme"]) == (port, "/metrics", scheme)
    tls = one(objs, "ServiceMonitor", "cos-webhook")["spec"]["endpoints"][0]["tlsConfig"]
    assert tls == {"serverName": "cos-webhook.olmv1-system.svc",
                   "ca": {"secret": {"name": "cos-webhook-tls", "key": "ca.crt"}}}


def test_component_composes_with_deploy(objs: list[Obj], tmp_path: Path) -> None:
    """Opting in as the Component's own comment says (`components:` next to deploy/) renders deploy/ plus these
    four objects, untouched, with deploy/'s objects in their own order."""
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(ROOT / "deploy", tmp_path)],
        "components": [os.path.relpath(COMPONENT, tmp_path)]}))  # kustomize refuses absolute paths
    composed = kustomize.render(tmp_path)
    deploy = kustomize.render(ROOT / "deploy")
    assert sorted(map(key, composed)) == sorted(map(key, deploy + objs))
    assert [o for o in composed if o in deploy] == deploy


def key(obj: Obj) -> str:
    return json.dumps(obj, sort_keys=True)


# ---- schemas --------------------------------------------------------------------------------------------------

def test_dashboard_configmap_is_valid_for_every_kubernetes_release(objs: list[Obj]) -> None:
    cm = one(objs, "ConfigMap", "cos-dashboard")
    for version in schemas.versions():
        assert schemas.errors(cm, version) == [], version


# The prometheus-operator's v1 kinds, as models generated from its CRDs. They ignore fields they do not declare
# (pydantic's default) and accept a field by its Python name as well as by its JSON name (``for_`` for ``for``),
# so unknown fields are found by walking the input against the models' fields by JSON name, below.
MODELS: dict[str, type[pydantic.BaseModel]] = {
    "PrometheusRule": prometheus_operator.PrometheusRule,
    "ServiceMonitor": prometheus_operator.ServiceMonitor,
}


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(map(str, path)) or "<root>"


def _unknown_fields(annotation: Any, value: Any, path: tuple[str | int, ...] = ()) -> list[str]:
    """Where ``value`` has a field that the type ``annotation`` (a model, or a list, dict, Optional or Union
    of them) does not declare by its JSON name: the fields the API server's strict field validation refuses."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _unknown_fields(args[0], value, path)
    if origin in (typing.Union, types.UnionType):
        alternatives = [a for a in args if a is not type(None)]
        if value is None or not alternatives:
            return []
        # The alternative the value fits best: with several (int or str, two shapes of a quantity), the
        # one that declares the most of its fields.
        return min((_unknown_fields(a, value, path) for a in alternatives), key=len)
    if origin is list and isinstance(value, list):
        return [e for i, item in enumerate(value) for e in _unknown_fields(args[0], item, (*path, i))]
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return [e for k, item in value.items() for e in _unknown_fields(args[1], item, (*path, k))]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.RootModel):
        return _unknown_fields(annotation.model_fields["root"].annotation, value, path)
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel) and isinstance(value, dict):
        fields = {f.alias or name: f for name, f in annotation.model_fields.items()}
        errors = []
        for key, item in value.items():
            if key in fields:
                errors += _unknown_fields(fields[key].annotation, item, (*path, key))
            elif annotation.model_config.get("extra") != "allow":
                errors.append(f"{_dotted((*path, key))}: Extra inputs are not permitted")
        return errors
    return []


def crd_errors(obj: Obj) -> list[str]:
    """What the API server would refuse in ``obj``: fields the CRD does not declare, values of the wrong type
    (checked strictly: nothing is coerced) or outside an enum or pattern, required fields missing."""
    model = MODELS[obj["kind"]]
    errors = _unknown_fields(model, obj)
    try:
        parsed = model.model_validate(obj, strict=True)
    except pydantic.ValidationError as exc:
        errors += [f"{_dotted(e['loc'])}: {e['msg']}" for e in exc.errors()]
    else:
        # A cross-check of the walk above: a valid object with no unknown field reads back unchanged.
        if not errors and parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") != obj:
            errors.append("<root>: the model does not read the object back unchanged")
    return sorted(errors)


def test_prometheus_rule_and_service_monitors_are_valid_for_the_prometheus_operator_crds(objs: list[Obj]) -> None:
    monitoring = [o for o in objs if o["apiVersion"] == "monitoring.coreos.com/v1"]
    assert len(monitoring) == 3
    for obj in monitoring:
        assert crd_errors(obj) == [], kustomize.describe(obj)


def test_the_crd_check_catches_mistakes(objs: list[Obj]) -> None:
    """The schema check can fail: a misspelt field, a wrong type and a missing required field are reported;
    so are a field given by the models' Python name, a misspelt field deep in a ServiceMonitor or in metadata
    and a value outside an enum."""
    rule = copy.deepcopy(one(objs, "PrometheusRule", "cos-alerts"))
    rule["spec"]["groups"][0]["rules"][0]["fro"] = "5m"
    rule["spec"]["groups"][0]["rules"][1]["labels"] = {"severity": 3}
    groups = rule["spec"]["groups"]
    groups.append({"rules": [copy.deepcopy(groups[0]["rules"][2])]})  # a second group, without its name
    groups[1]["rules"][0]["for_"] = groups[1]["rules"][0].pop("for")
    assert crd_errors(rule) == [
        "spec.groups.0.rules.0.fro: Extra inputs are not permitted",
        "spec.groups.0.rules.1.labels.severity: Input should be a valid string",
        "spec.groups.1.name: Field required",
        "spec.groups.1.rules.0.for_: Extra inputs are not permitted",
    ]
    monitor = copy.deepcopy(one(objs, "ServiceMonitor", "cos-webhook"))
    monitor["spec"]["endpoints"][0]["scheme"] = "tcp"
    monitor["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["keys"] = "ca.crt"
    monitor["metadata"]["label"] = {}
    monitor["spec"]["endpoints"][0]["interval"] = 30
    assert crd_errors(monitor) == [
        "metadata.label: Extra inputs are not permitted",
        "spec.endpoints.0.interval: Input should be a valid string",
        "spec.endpoints.0.scheme: Input should be 'http' or 'https'",
        "spec.endpoints.0.tlsConfig.ca.secret.keys: Extra inputs are not permitted",
    ]


# ---- PromQL: it parses, and uses only exported metrics --------------------------------------------------------

def rules(objs: list[Obj]) -> Iterator[tuple[str, Obj]]:
    for group in one(objs, "PrometheusRule", "cos-alerts")["spec"]["groups"]:
        for rule in group["rules"]:
            yield group["name"], rule


def dashboard(objs: list[Obj]) -> Obj:
    return json.loads(one(objs, "ConfigMap", "cos-dashboard")["data"][DASHBOARD_KEY])


def panels(objs: list[Obj]) -> Iterator[tuple[str, Obj]]:
    """(title of the row it sits in, panel) for every panel that queries something."""
    row = ""
    for panel in dashboard(objs)["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
            assert not panel.get("panels"), "rows are expanded: their panels follow them"
            continue
        yield row, panel


def expressions(objs: list[Obj]) -> Iterator[tuple[str, bool, str]]:
    """(where, pending?, PromQL) for every alert and every dashboard query."""
    for group, rule in rules(objs):
        yield f"alert {rule['alert']}", group == PENDING_GROUP, rule["expr"]
    for row, panel in panels(objs):
        for target in panel["targets"]:
            expr = target["expr"]
            for variable, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(variable, value)
            yield f"panel {panel['title']!r} {target['refId']}", row.startswith(PENDING_ROW), expr


def selectors(expr: str) -> list[promql_parser.VectorSelector]:
    found: list[promql_parser.VectorSelector] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(promql_parser.parse(expr), pre_visit=visit)
    return found


def metric_name(selector: promql_parser.VectorSelector) -> str:
    if selector.name:
        return selector.name
    names = [m.value for m in selector.matchers.matchers
             if m.name == "__name__" and m.op == promql_parser.MatchOp.Equal]
    assert len(names) == 1, f"selector {selector} names no single metric"
    return names[0]


def test_every_expression_parses(objs: list[Obj]) -> None:
    count = 0
    for where, _, expr in expressions(objs):
        assert "$" not in expr, f"{where}: a Grafana variable the check does not know: {expr}"
        try:
            promql_parser.parse(expr)
        except ValueError as exc:
            pytest.fail(f"{where}: not valid PromQL ({exc}): {expr}")
        count += 1
    assert count >= 30


def test_the_parser_rejects_bad_promql() -> None:
    for bad in ("sum(rate(cos_leader[5m])", "cos_leader{le=5}", "rate(cos_leader)"):
        with pytest.raises(ValueError):
            promql_parser.parse(bad)


def test_every_metric_used_is_exported_by_the_code(objs: list[Obj]) -> None:
    names = exported()
    problems = []
    used_pending = set()
    for where, pending, expr in expressions(objs):
        for selector in selectors(expr):
            name = metric_name(selector)
            if name in names:
                continue
            if name in PENDING and pending:
                used_pending.add(name)
                continue
            problems.append(f"{where}: {name} is not exported by the code" +
                            (" (pending metrics belong in the pending group/row only)" if name in PENDING else ""))
    assert problems == []
    assert used_pending == PENDING - set(names), "PENDING lists a metric nothing uses"


def test_histogram_bucket_bounds_used_exist(objs: list[Obj]) -> None:
    """`le` matchers name real bucket bounds, as the client library formats them ("5.0", not "5")."""
    from webhook import metrics as webhook_metrics

    bounds = {"cos_webhook_admission_duration_seconds_bucket":
              {prometheus_client.utils.floatToGoString(b) for b in webhook_metrics.DURATION._upper_bounds}}
    seen = 0
    for where, _, expr in expressions(objs):
        for selector in selectors(expr):
            for m in selector.matchers.matchers:
                if m.name == "le":
                    assert m.value in bounds[metric_name(selector)], f"{where}: no bucket le={m.value!r}"
                    seen += 1
    assert seen >= 1


# ---- alert and dashboard hygiene ------------------------------------------------------------------------------

def test_alerts_are_complete(objs: list[Obj]) -> None:
    alerts = list(rules(objs))
    assert {r["alert"] for _, r in alerts} == {
        "CosReconcilerNoLeader", "CosReconcilerSeveralLeaders", "CosReconcileErrors", "CosWebhookErrors",
        "CosWebhookSlowAdmissions", "CosWebhookCertificateReloadFailing", "CosRevisionBlocked",
        "CosRevisionProgressDeadlineExceeded", "CosRolloutTakingTooLong", "CosWebhookCertificateExpiresSoon"}
    for _, rule in alerts:
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert set(rule["annotations"]) == {"summary", "description"}, rule["alert"]
        if "for" in rule:
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
            promql_parser.parse_duration(rule["for"])
    severities = sorted(r["labels"]["severity"] for _, r in alerts if r["alert"] == "CosWebhookCertificateExpiresSoon")
    assert severities == ["critical", "warning"]


def test_dashboard_is_well_formed(objs: list[Obj]) -> None:
    dash = dashboard(objs)
    assert dash["uid"] == "cluster-object-set" and dash["title"] == "ClusterObjectSet"
    (variable,) = dash["templating"]["list"]
    assert (variable["name"], variable["type"], variable["query"]) == ("datasource", "datasource", "prometheus")
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in dash["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["w"] >= 1 and g["x"] + g["w"] <= 24, panel["title"]
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not area & cells, f"panel {panel['title']!r} overlaps another"
        cells |= area
    titles = []
    for _, panel in panels(objs):
        titles.append(panel["title"])
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert panel["description"], panel["title"]
    for wanted in ("Leader", "Work queue depth", "Reconcile latency", "Reconcile errors",
                   "API requests by verb and code", "Admissions by result", "Admission latency",
                   "Rollouts in progress", "Blocked", "Past their deadline", "Time to roll out"):
        assert wanted in titles
