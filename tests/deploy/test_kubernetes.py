"""deploy/kubernetes against the Kubernetes API's own schemas (``kubernetes-validate``, strict:
an unknown field fails), as files and as kustomize renders them; the ServiceMonitor (a custom
resource, whose schema the tool does not have) field by field; the Rules Submissions as the
controller reads them from their ConfigMap; Alertmanager's wiring; the placeholders of the
Secrets the operator creates.

The kustomization is rendered here by the few rules it uses (resources, a base directory,
configMapGenerator, labels), and also by ``kubectl kustomize`` when kubectl is on PATH (it is
not a Debian package): the two must give the same objects.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from controller.runtime import cli as controller_cli
from controller.runtime.rules_file import load_submission
from tests.deploy.test_compose import VERSION
from tests.deploy.test_deploy_files import (
    KUBERNETES,
    ROOT,
    flag_value,
    load_yaml,
    load_yaml_all,
    rel,
    selects,
)

# The oldest Kubernetes these manifests are meant for, and the newest the tool knows.
KUBE_VERSIONS = ("1.29", kubernetes_validate.utils.latest_version())
EXAMPLES = KUBERNETES / "examples"
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
KUBECTL = shutil.which("kubectl")

Object = dict[str, Any]


def patch_files() -> set[Path]:
    """The patches the kustomizations and Components apply (not objects of their own)."""
    return {
        (p.parent / patch["path"]).resolve()
        for p in KUBERNETES.rglob("kustomization.yaml")
        for patch in load_yaml(p).get("patches", [])
        if "path" in patch
    }


def manifest_files() -> list[Path]:
    """Every object file of deploy/kubernetes: what the kustomizations list, and examples."""
    return sorted(
        p
        for p in KUBERNETES.rglob("*.yaml")
        if p.name != "kustomization.yaml" and p.resolve() not in patch_files()
    )


def kustomizations(kind: str = "Kustomization") -> list[Path]:
    """The directories of deploy/kubernetes holding a kustomization (or a Component)."""
    return sorted(
        p.parent for p in KUBERNETES.rglob("kustomization.yaml") if load_yaml(p)["kind"] == kind
    )


COMPONENTS = kustomizations("Component")


def render(directory: Path, objects: list[Object] | None = None) -> list[Object]:
    """What kustomize builds from ``directory`` for the features deploy/ uses: resources
    (files, and directories with their own kustomization), configMapGenerator (files of the
    kustomization's own directory; without kustomize's hash suffix), labels, patches with
    ``$patch: delete`` and JSON 6902 replace/add operations (inline) on a named target."""
    kustomization = load_yaml(directory / "kustomization.yaml")
    known = {"apiVersion", "kind", "labels", "resources", "configMapGenerator", "patches"}
    assert set(kustomization) <= known, f"{rel(directory)}: unrendered {set(kustomization) - known}"
    objects = [] if objects is None else objects  # a Component works on what it is given
    own: list[Object] = []
    for resource in kustomization.get("resources", []):
        path = (directory / resource).resolve()
        own += render(path) if path.is_dir() else load_yaml_all(path)
    for generator in kustomization.get("configMapGenerator", []):
        data = {}
        for name in generator["files"]:
            file = directory / name
            assert file.resolve().parent == directory.resolve(), "kustomize's load restrictor"
            data[file.name] = file.read_text(encoding="utf-8")
        own.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": generator["name"]},
                "data": data,
            }
        )
    for label in kustomization.get("labels", []):
        for obj in own:
            obj["metadata"].setdefault("labels", {}).update(label["pairs"])
    objects = objects + own
    for patch in kustomization.get("patches", []):
        objects = apply_patch(directory, objects, patch)
    return objects


def apply_patch(directory: Path, objects: list[Object], patch: dict[str, Any]) -> list[Object]:
    body = (
        yaml.safe_load(patch["patch"]) if "patch" in patch else load_yaml(directory / patch["path"])
    )
    if isinstance(body, dict) and body.get("$patch") == "delete":
        key = (body["kind"], body["metadata"]["name"])
        kept = [o for o in objects if (o["kind"], o["metadata"]["name"]) != key]
        assert len(kept) == len(objects) - 1, f"{patch['path']}: deletes nothing"
        return kept
    target = patch["target"]
    (obj,) = [
        o for o in objects if (o["kind"], o["metadata"]["name"]) == (target["kind"], target["name"])
    ]
    for operation in body:
        *parents, last = [part for part in operation["path"].split("/") if part]
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        assert operation["op"] in ("replace", "add"), operation["op"]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if operation["op"] == "add":
                node.insert(index, operation["value"])
            else:
                node[index] = operation["value"]
        else:
            assert operation["op"] == "add" or last in node, (
                f"{operation['path']}: nothing to replace"
            )
            node[last] = operation["value"]
    return objects


def by_name(objects: list[Object]) -> dict[tuple[str, str], Object]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


RENDERED = {rel(d): render(d) for d in kustomizations()}
for _component in COMPONENTS:  # each with the base, as a site's kustomization would use it
    RENDERED[rel(_component)] = render(_component, render(KUBERNETES))


# --- the API's schemas ------------------------------------------------------------------------


def documents() -> list[tuple[str, Object]]:
    found = [
        (f"{rel(p)} {d['kind']}/{d['metadata']['name']}", d)
        for p in manifest_files()
        for d in load_yaml_all(p)
        if "kind" in d and "metadata" in d
    ]
    for where, objects in RENDERED.items():
        found += [(f"kustomize {where} {o['kind']}/{o['metadata']['name']}", o) for o in objects]
    return found


DOCUMENTS = documents()


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize(("where", "doc"), DOCUMENTS, ids=[w for w, _ in DOCUMENTS])
def test_manifests_validate_strictly(where: str, doc: Object, version: str) -> None:
    if (doc["apiVersion"], doc["kind"]) in CUSTOM_KINDS:
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate(doc, version, strict=True)
        return  # checked field by field below
    kubernetes_validate.validate(doc, version, strict=True)


def test_strict_validation_refuses_an_unknown_field() -> None:
    """The check is real: a misspelt field of a manifest fails it."""
    (deployment,) = [d for _, d in DOCUMENTS if d["kind"] == "Deployment"][:1]
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBE_VERSIONS[-1], strict=True)


def test_every_manifest_is_rendered_or_an_example() -> None:
    used: set[Path] = set()
    for directory in kustomizations() + COMPONENTS:
        kustomization = load_yaml(directory / "kustomization.yaml")
        for resource in kustomization.get("resources", []):
            path = (directory / resource).resolve()
            assert path.exists(), f"{rel(directory)}: {resource}"
            if path.is_dir():
                assert (path / "kustomization.yaml").is_file(), resource
            used.add(path)
        for patch in kustomization.get("patches", []):
            assert "patch" in patch or (directory / patch["path"]).is_file(), patch
    for path in manifest_files():
        assert path.parent == EXAMPLES or path.resolve() in used, (
            f"{rel(path)} is in no kustomization"
        )
    assert {"deploy/kubernetes", "deploy/kubernetes/sentinel"} <= set(RENDERED)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (not a Debian package)")
@pytest.mark.parametrize("directory", kustomizations() + COMPONENTS, ids=rel)
def test_kubectl_kustomize_builds_the_same_objects(directory: Path, tmp_path: Path) -> None:
    assert KUBECTL is not None
    build = directory
    if directory in COMPONENTS:  # a site's kustomization: the base with the Component
        build = tmp_path / "site"
        build.mkdir()
        site = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [os.path.relpath(KUBERNETES, build)],
            "components": [os.path.relpath(directory, build)],
        }
        (build / "kustomization.yaml").write_text(yaml.safe_dump(site), encoding="utf-8")
    result = subprocess.run(
        [KUBECTL, "kustomize", str(build)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    built = [d for d in yaml.safe_load_all(result.stdout) if d]
    ours = by_name(RENDERED[rel(directory)])
    generated = {n for k, n in ours if k == "ConfigMap"}
    hashed = {}  # the generators' names with kustomize's hash suffix, and where they are used
    for obj in built:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ConfigMap" and name.rpartition("-")[0] in generated:
            hashed[name] = name.rpartition("-")[0]
    text = json.dumps(built)
    for name, plain in hashed.items():
        text = text.replace(f'"{name}"', f'"{plain}"')
    theirs = by_name(json.loads(text))
    assert set(theirs) == set(ours)
    for key, obj in theirs.items():
        if (obj["apiVersion"], obj["kind"]) not in CUSTOM_KINDS:
            kubernetes_validate.validate(obj, KUBE_VERSIONS[-1], strict=True)
        assert obj == ours[key], key


# --- the objects ------------------------------------------------------------------------------


def base() -> dict[tuple[str, str], Object]:
    return by_name(RENDERED["deploy/kubernetes"])


def test_images_are_pinned() -> None:
    for where, objects in RENDERED.items():
        for obj in objects:
            spec = obj.get("spec", {})
            pod = spec.get("template", spec.get("jobTemplate", {}).get("spec", {}).get("template"))
            if not pod:
                continue
            for container in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
                image = container["image"]
                name, _, tag = image.rpartition(":")
                if name == "table-jackpot":
                    assert tag == VERSION, f"{where}: {image}"
                else:
                    assert tag.lstrip("v").count(".") == 2, f"{where}: {image} is not exact"


def test_the_rules_configmap_is_what_the_controller_reads(tmp_path: Path) -> None:
    objects = base()
    rules = objects[("ConfigMap", "jackpot-rules")]
    assert set(rules["data"]) == {p.name for p in (ROOT / "deploy/rules").glob("*.toml")}
    deployment = objects[("Deployment", "jackpot-controller")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (volume,) = [v for v in pod["volumes"] if v.get("configMap", {}).get("name") == "jackpot-rules"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert "subPath" not in mount and "items" not in volume["configMap"]
    args = controller_cli._parser()[0].parse_args(container["command"][1:])
    assert {p.name for p in args.rules} == set(rules["data"]), "every submission, once"
    for path in args.rules:
        assert path.parent == Path(mount["mountPath"]), path
        copy = tmp_path / path.name
        copy.write_text(rules["data"][path.name], encoding="utf-8")
        load_submission(copy)  # the controller's own validation
    assert not args.first_install, "a new installation is declared once, not in the manifest"


def test_servicemonitor_scrapes_the_controllers_metrics_as_job_jackpot_controller() -> None:
    objects = base()
    monitor = objects[("ServiceMonitor", "jackpot-controller")]
    spec = monitor["spec"]
    assert set(spec) <= {"jobLabel", "selector", "endpoints", "namespaceSelector"}
    services = [
        s
        for (kind, _), s in objects.items()
        if kind == "Service" and selects(spec["selector"], s["metadata"]["labels"])
    ]
    (service,) = [s for s in services if s["metadata"]["name"] == "jackpot-controller-metrics"]
    assert all(s["spec"].get("clusterIP") == "None" or s is service for s in services), (
        "only the metrics Service (the headless gRPC one has no metrics port)"
    )
    assert service["metadata"]["labels"][spec["jobLabel"]] == "jackpot-controller", (
        "the job the alert rules select"
    )
    (endpoint,) = spec["endpoints"]
    assert set(endpoint) <= {"port", "path", "scheme", "interval", "scrapeTimeout"}
    (port,) = [p for p in service["spec"]["ports"] if p["name"] == endpoint["port"]]
    deployment = objects[("Deployment", "jackpot-controller")]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    metrics_port = int(flag_value(container["command"], "--metrics-port"))
    assert [p["containerPort"] for p in container["ports"] if p["name"] == port["targetPort"]] == [
        metrics_port
    ]
    assert endpoint["path"] == "/metrics" and endpoint["scheme"] == "http"
    assert endpoint["interval"].endswith("s")


def test_alertmanager() -> None:
    objects = base()
    statefulset = objects[("StatefulSet", "jackpot-alertmanager")]
    pod = statefulset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"])
    peers = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--cluster.peer=")]
    headless = objects[("Service", statefulset["spec"]["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"
    replicas = statefulset["spec"]["replicas"]
    assert sorted(peers) == [
        f"{statefulset['metadata']['name']}-{i}.{headless['metadata']['name']}:9094"
        for i in range(replicas)
    ]
    config = Path(args["config.file"])
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == str(config.parent)]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == "jackpot-alertmanager", "receivers hold credentials"
    assert [i["path"] for i in volume["secret"]["items"]] == [config.name]
    web = objects[("Service", "jackpot-alertmanager")]["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in web] == [(9093, "web")]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "web": 9093,
        "cluster": 9094,
    }
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_alertmanager_network_policy() -> None:
    objects = base()
    (policy,) = [
        o["spec"]
        for (kind, _), o in objects.items()
        if kind == "NetworkPolicy"
        and selects(o["spec"]["podSelector"], {"app.kubernetes.io/name": "jackpot-alertmanager"})
    ]
    admitted = {port["port"]: rule["from"] for rule in policy["ingress"] for port in rule["ports"]}
    (prometheus,) = admitted[9093]
    assert selects(prometheus["podSelector"], {"app.kubernetes.io/name": "prometheus"})
    assert prometheus["namespaceSelector"]["matchLabels"]
    (peers,) = admitted[9094]
    assert selects(peers["podSelector"], {"app.kubernetes.io/name": "jackpot-alertmanager"})


def mounted_sources(objects: list[Object]) -> dict[tuple[str, str], set[str]]:
    """(kind, name) -> keys of every Secret and ConfigMap a pod of ``objects`` mounts."""
    found: dict[tuple[str, str], set[str]] = {}
    for obj in objects:
        spec = obj.get("spec", {})
        pod = spec.get("template", spec.get("jobTemplate", {}).get("spec", {}).get("template"))
        for volume in (pod or {}).get("spec", {}).get("volumes", []):
            for kind, key in (("Secret", "secretName"), ("ConfigMap", "name")):
                source = volume.get(kind[0].lower() + kind[1:])
                if source:
                    keys = {item["key"] for item in source.get("items", [])}
                    found.setdefault((kind, source[key]), set()).update(keys)
    return found


def test_the_examples_show_every_object_the_operator_creates() -> None:
    examples = by_name(load_yaml_all(EXAMPLES / "secrets.yaml"))
    created = {key for key in mounted_sources(RENDERED["deploy/kubernetes"]) if key not in base()}
    assert set(examples) == created, "every Secret and ConfigMap the pods need and nothing else"
    for key, obj in examples.items():
        values: dict[str, str] = obj.get("stringData") or obj.get("data") or {}
        assert mounted_sources(RENDERED["deploy/kubernetes"])[key] <= set(values), key
        for name, value in values.items():
            assert "-----BEGIN" not in value, f"{key} {name}: key material"
            if key[0] == "Secret":
                assert value.startswith("<") and value.endswith(">"), f"{key} {name}: a placeholder"
    text = (EXAMPLES / "secrets.yaml").read_text(encoding="utf-8")
    for kind, name in examples:
        assert f"create {'secret generic' if kind == 'Secret' else 'configmap'} {name}" in text
