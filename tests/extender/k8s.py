# SPDX-License-Identifier: Apache-2.0
"""Kubernetes objects shaped as client-go marshals them (kube-scheduler sends
these to the extender): full metadata with managedFields, spec, status."""
import json
import time
import uuid

RES_BW = "ioqos/bandwidth"
RES_IOPS = "ioqos/iops"


def disk(name, cap_bw=1000, cap_iops=0, alloc_bw=0, alloc_iops=0, cls="default", healthy=True,
         dev="259:0"):
    d = {"name": name, "dev": dev, "class": cls, "healthy": healthy,
         "capacity": {RES_BW: cap_bw}, "allocated": {RES_BW: alloc_bw},
         "capabilities": ["io.max", "io.weight"]}
    if cap_iops or alloc_iops:
        d["capacity"][RES_IOPS] = cap_iops
        d["allocated"][RES_IOPS] = alloc_iops
    return d


def annotation(node, disks, pods=None, published=None):
    """published: seconds since the epoch for publishedAt (None: absent, as
    from a plugin older than the freshness marker)."""
    a = {"version": 1, "node": node, "units": {RES_BW: 1048576, RES_IOPS: 100},
         "devices": disks}
    if pods is not None:
        a["pods"] = pods
    if published is not None:
        a["publishedAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(published))
    return json.dumps(a, separators=(",", ":"))


def node(name, disks=None, raw_annotation=None, rv="1"):
    """A Node; disks=None and raw_annotation=None means no ioqos annotation."""
    annotations = {
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if raw_annotation is not None:
        annotations["ioqos.io/devices"] = raw_annotation
    elif disks is not None:
        annotations["ioqos.io/devices"] = annotation(name, disks)
    bw_total = sum(d["capacity"].get(RES_BW, 0) for d in (disks or []))
    return {
        "metadata": {
            "name": name,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
            "resourceVersion": rv,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
                       "kubernetes.io/os": "linux"},
            "annotations": annotations,
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                 "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:volumes.kubernetes.io/controller-managed-attach-detach": {}},
                                             "f:labels": {".": {}, "f:kubernetes.io/arch": {}, "f:kubernetes.io/hostname": {}}}}},
                {"manager": "ioqos-plugin", "operation": "Update", "apiVersion": "v1",
                 "time": "2024-05-01T10:01:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:annotations": {"f:ioqos.io/devices": {}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                 "time": "2024-05-01T10:02:00Z", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:allocatable": {"f:ioqos/bandwidth": {}},
                                           "f:capacity": {"f:ioqos/bandwidth": {}},
                                           "f:conditions": {"k:{\"type\":\"Ready\"}": {"f:lastHeartbeatTime": {}, "f:status": {}}}}}},
            ],
        },
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
        "status": {
            "capacity": {"cpu": "8", "memory": "32781676Ki", "pods": "110",
                         "ephemeral-storage": "102626232Ki", RES_BW: str(bw_total)},
            "allocatable": {"cpu": "8", "memory": "32679276Ki", "pods": "110",
                            "ephemeral-storage": "94580335255", RES_BW: str(bw_total)},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2024-05-01T10:02:00Z",
                 "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "KubeletHasSufficientMemory",
                 "message": "kubelet has sufficient memory available"},
                {"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-05-01T10:02:00Z",
                 "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "0f2d", "systemUUID": "0f2d", "bootID": "b1",
                         "kernelVersion": "6.1.0-18-amd64", "osImage": "Debian GNU/Linux 12 (bookworm)",
                         "containerRuntimeVersion": "containerd://1.7.13", "kubeletVersion": "v1.30.0",
                         "kubeProxyVersion": "v1.30.0", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": ["registry.k8s.io/etcd@sha256:44a8e24dcbba", "registry.k8s.io/etcd:3.5.12-0"],
                        "sizeBytes": 57236178},
                       {"names": ["docker.io/library/postgres@sha256:0123", "docker.io/library/postgres:16"],
                        "sizeBytes": 155000000}],
        },
    }


def resources(bw=0, iops=0, cpu="100m"):
    lim, req = {}, {"cpu": cpu, "memory": "64Mi"}
    if bw:
        lim[RES_BW] = str(bw)
        req[RES_BW] = str(bw)
    if iops:
        lim[RES_IOPS] = str(iops)
        req[RES_IOPS] = str(iops)
    r = {"requests": req}
    if lim:
        r["limits"] = lim
    return r


def container(name, bw=0, iops=0, sidecar=False):
    c = {"name": name, "image": "busybox:1.36", "resources": resources(bw, iops),
         "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
         "imagePullPolicy": "IfNotPresent"}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def pod(name, ns="default", containers=None, init=None, cls=None, uid=None, disk=None,
        scheduler="ioqos-scheduler"):
    """containers/init: lists of container() dicts; scheduler: spec.schedulerName
    (the extender binds only pods of the schedulers it serves)."""
    ann = {}
    if cls:
        ann["ioqos.io/class"] = cls
    if disk:
        ann["ioqos.io/disk"] = disk
    p = {
        "metadata": {
            "name": name, "namespace": ns, "uid": uid or str(uuid.uuid4()),
            "resourceVersion": "100", "creationTimestamp": "2024-05-01T11:00:00Z",
            "labels": {"app": name},
            "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                               "time": "2024-05-01T11:00:00Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:resources": {".": {}}}}}}}],
        },
        "spec": {
            "containers": containers if containers is not None else [container("app")],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
            "schedulerName": scheduler,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }
    if ann:
        p["metadata"]["annotations"] = ann
    if init:
        p["spec"]["initContainers"] = init
    return p


def ioqos_pod(name, bw=0, iops=0, **kw):
    return pod(name, containers=[container("app", bw, iops)], **kw)


def filter_args(pod_obj, nodes=None, names=None):
    """ExtenderArgs exactly as Go's json.Marshal writes it (no json tags)."""
    return {
        "Pod": pod_obj,
        "Nodes": {"metadata": {}, "items": nodes} if nodes is not None else None,
        "NodeNames": names,
    }
