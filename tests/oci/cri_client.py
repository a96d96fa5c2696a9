"""A minimal client of the Kubernetes CRI (k8s.io/cri-api, runtime.v1 and
v1alpha2 share these messages' field numbers) for tests/oci/cri.py: the few
RuntimeService and ImageService calls a kubelet makes for a pod, encoded by
hand in protobuf's wire format and carried by python3-grpcio with identity
serializers. No generated stubs: the schema below names only the fields the
test sets or reads (the field numbers are cri-api's), and the decoder skips
any field it does not name, as protobuf's own does.
"""
import grpc

# Field types: "string", "bytes", "int" (int32/int64/uint32/uint64 and enums:
# varint), "bool", or the name of a message below. A list [type] is repeated.
SCHEMA = {
    "VersionRequest": {"version": (1, "string")},
    "VersionResponse": {"version": (1, "string"), "runtime_name": (2, "string"),
                        "runtime_version": (3, "string"), "runtime_api_version": (4, "string")},
    "StatusRequest": {"verbose": (1, "bool")},
    "RuntimeCondition": {"type": (1, "string"), "status": (2, "bool"), "reason": (3, "string"),
                         "message": (4, "string")},
    "RuntimeStatus": {"conditions": (1, ["RuntimeCondition"])},
    "StatusResponse": {"status": (1, "RuntimeStatus")},
    "PodSandboxMetadata": {"name": (1, "string"), "uid": (2, "string"),
                           "namespace": (3, "string"), "attempt": (4, "int")},
    # NamespaceMode: POD 0, CONTAINER 1, NODE 2, TARGET 3.
    "NamespaceOption": {"network": (1, "int"), "pid": (2, "int"), "ipc": (3, "int"),
                        "target_id": (4, "string")},
    "LinuxSandboxSecurityContext": {"namespace_options": (1, "NamespaceOption"),
                                    "seccomp": (9, "SecurityProfile")},
    "LinuxPodSandboxConfig": {"cgroup_parent": (1, "string"),
                              "security_context": (2, "LinuxSandboxSecurityContext"),
                              "sysctls": (3, ["StringEntry"])},
    # Protocol: TCP 0.
    "PortMapping": {"protocol": (1, "int"), "container_port": (2, "int"),
                    "host_port": (3, "int"), "host_ip": (4, "string")},
    "PodSandboxConfig": {"metadata": (1, "PodSandboxMetadata"), "hostname": (2, "string"),
                         "log_directory": (3, "string"), "port_mappings": (5, ["PortMapping"]),
                         "linux": (8, "LinuxPodSandboxConfig")},
    "RunPodSandboxRequest": {"config": (1, "PodSandboxConfig"), "runtime_handler": (2, "string")},
    "RunPodSandboxResponse": {"pod_sandbox_id": (1, "string")},
    "PodSandboxIdRequest": {"pod_sandbox_id": (1, "string")},  # Stop/Remove/Status
    "PodSandboxNetworkStatus": {"ip": (1, "string")},
    "PodSandboxStatus": {"id": (1, "string"), "state": (3, "int"),
                         "network": (5, "PodSandboxNetworkStatus"),
                         "runtime_handler": (9, "string")},
    "PodSandboxStatusResponse": {"status": (1, "PodSandboxStatus")},
    "ImageSpec": {"image": (1, "string")},
    "KeyValue": {"key": (1, "string"), "value": (2, "string")},
    "ContainerMetadata": {"name": (1, "string"), "attempt": (2, "int")},
    # ProfileType: RuntimeDefault 0, Unconfined 1, Localhost 2.
    "SecurityProfile": {"profile_type": (1, "int"), "localhost_ref": (2, "string")},
    "Capability": {"add_capabilities": (1, ["string"]), "drop_capabilities": (2, ["string"])},
    # A map<string, string>'s entries, as protobuf carries them.
    "StringEntry": {"key": (1, "string"), "value": (2, "string")},
    "Int64Value": {"value": (1, "int")},
    "LinuxContainerSecurityContext": {"capabilities": (1, "Capability"),
                                      "namespace_options": (3, "NamespaceOption"),
                                      "run_as_user": (5, "Int64Value"),
                                      "readonly_rootfs": (7, "bool"),
                                      # Sent unpacked: parsers take both forms.
                                      "supplemental_groups": (8, ["int"]),
                                      "run_as_group": (12, "Int64Value"),
                                      "seccomp": (15, "SecurityProfile")},
    "LinuxContainerResources": {"cpu_period": (1, "int"), "cpu_quota": (2, "int"),
                                "cpu_shares": (3, "int"), "memory_limit_in_bytes": (4, "int")},
    "LinuxContainerConfig": {"resources": (1, "LinuxContainerResources"),
                             "security_context": (2, "LinuxContainerSecurityContext")},
    "Mount": {"container_path": (1, "string"), "host_path": (2, "string"),
              "readonly": (3, "bool")},
    "ContainerConfig": {"metadata": (1, "ContainerMetadata"), "image": (2, "ImageSpec"),
                        "command": (3, ["string"]), "args": (4, ["string"]),
                        "working_dir": (5, "string"), "envs": (6, ["KeyValue"]),
                        "mounts": (7, ["Mount"]), "stdin": (12, "bool"),
                        "stdin_once": (13, "bool"), "tty": (14, "bool"),
                        "annotations": (10, ["StringEntry"]), "log_path": (11, "string"),
                        "linux": (15, "LinuxContainerConfig")},
    "CreateContainerRequest": {"pod_sandbox_id": (1, "string"), "config": (2, "ContainerConfig"),
                               "sandbox_config": (3, "PodSandboxConfig")},
    "CreateContainerResponse": {"container_id": (1, "string")},
    "ContainerIdRequest": {"container_id": (1, "string")},  # Start/Remove/Status
    "StopContainerRequest": {"container_id": (1, "string"), "timeout": (2, "int")},
    # ContainerState: CREATED 0, RUNNING 1, EXITED 2, UNKNOWN 3.
    "ContainerStatus": {"id": (1, "string"), "state": (3, "int"), "started_at": (5, "int"),
                        "finished_at": (6, "int"), "exit_code": (7, "int"),
                        "reason": (10, "string"), "message": (11, "string"),
                        "log_path": (15, "string")},
    "ContainerStatusResponse": {"status": (1, "ContainerStatus")},
    "ExecSyncRequest": {"container_id": (1, "string"), "cmd": (2, ["string"]),
                        "timeout": (3, "int")},
    "ExecSyncResponse": {"stdout": (1, "bytes"), "stderr": (2, "bytes"), "exit_code": (3, "int")},
    # The streaming calls: each answers with a URL of the plugin's stream
    # server, where the stream itself runs (tests/oci/cri_stream.py).
    "ExecRequest": {"container_id": (1, "string"), "cmd": (2, ["string"]), "tty": (3, "bool"),
                    "stdin": (4, "bool"), "stdout": (5, "bool"), "stderr": (6, "bool")},
    "AttachRequest": {"container_id": (1, "string"), "stdin": (2, "bool"), "tty": (3, "bool"),
                      "stdout": (4, "bool"), "stderr": (5, "bool")},
    # Sent unpacked, as supplemental_groups.
    "PortForwardRequest": {"pod_sandbox_id": (1, "string"), "port": (2, ["int"])},
    "StreamUrlResponse": {"url": (1, "string")},  # Exec/Attach/PortForwardResponse
    "UInt64Value": {"value": (1, "int")},
    "CpuUsage": {"timestamp": (1, "int"), "usage_core_nano_seconds": (2, "UInt64Value")},
    "MemoryUsage": {"timestamp": (1, "int"), "working_set_bytes": (2, "UInt64Value"),
                    "usage_bytes": (4, "UInt64Value")},
    "ContainerAttributes": {"id": (1, "string")},
    "ContainerStats": {"attributes": (1, "ContainerAttributes"), "cpu": (2, "CpuUsage"),
                       "memory": (3, "MemoryUsage")},
    "ContainerStatsResponse": {"stats": (1, "ContainerStats")},
    "Image": {"id": (1, "string"), "repo_tags": (2, ["string"])},
    "ImageStatusRequest": {"image": (1, "ImageSpec")},
    "ImageStatusResponse": {"image": (1, "Image")},
    "Empty": {},
}

NODE = 2
CONTAINER = 1
POD = 0
CONTAINER_CREATED, CONTAINER_RUNNING, CONTAINER_EXITED = 0, 1, 2


def _varint(n):
    n &= (1 << 64) - 1  # negative int32/int64: ten bytes of two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode(name, message):
    """The wire bytes of message (a dict of field names) as SCHEMA's name."""
    schema = SCHEMA[name]
    out = bytearray()
    for field, value in message.items():
        number, kind = schema[field]
        values = value if isinstance(kind, list) else [value]
        kind = kind[0] if isinstance(kind, list) else kind
        for v in values:
            if kind in ("int", "bool"):
                out += _varint(number << 3) + _varint(int(v))
            else:
                if kind == "string":
                    data = v.encode()
                elif kind == "bytes":
                    data = bytes(v)
                else:
                    data = encode(kind, v)
                out += _varint(number << 3 | 2) + _varint(len(data)) + data
    return bytes(out)


def _read_varint(data, i):
    n = shift = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        byte = data[i]
        i += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, i


def decode(name, data):
    """A dict of the fields SCHEMA names (others skipped); absent ones take
    proto3's defaults, so a reader never meets a missing key."""
    schema = SCHEMA[name]
    by_number = {number: (field, kind) for field, (number, kind) in schema.items()}
    out = {}
    for field, (_, kind) in schema.items():
        if isinstance(kind, list):
            out[field] = []
        elif kind in ("int", "bool"):
            out[field] = 0 if kind == "int" else False
        elif kind == "string":
            out[field] = ""
        elif kind == "bytes":
            out[field] = b""
        else:
            out[field] = decode(kind, b"")
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            raw, i = _read_varint(data, i)
        elif wire == 2:
            size, i = _read_varint(data, i)
            raw, i = data[i:i + size], i + size
        elif wire == 1:
            raw, i = data[i:i + 8], i + 8
        elif wire == 5:
            raw, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"{name}: wire type {wire} of field {number}")
        if number not in by_number:
            continue
        field, kind = by_number[number]
        repeated = isinstance(kind, list)
        kind = kind[0] if repeated else kind
        if kind == "int":
            value = raw - (1 << 64) if raw >= 1 << 63 else raw
        elif kind == "bool":
            value = bool(raw)
        elif kind == "string":
            value = bytes(raw).decode()
        elif kind == "bytes":
            value = bytes(raw)
        else:
            value = decode(kind, bytes(raw))
        if repeated:
            out[field].append(value)
        else:
            out[field] = value
    return out


assert decode("ExecSyncResponse", encode("ExecSyncResponse", {
    "stdout": b"x", "exit_code": -1}))["exit_code"] == -1


class Cri:
    """RuntimeService and ImageService over a containerd socket, in the API
    version the server answers (runtime.v1 first, then v1alpha2)."""

    CALLS = {
        "Version": ("RuntimeService", "VersionRequest", "VersionResponse"),
        "Status": ("RuntimeService", "StatusRequest", "StatusResponse"),
        "RunPodSandbox": ("RuntimeService", "RunPodSandboxRequest", "RunPodSandboxResponse"),
        "StopPodSandbox": ("RuntimeService", "PodSandboxIdRequest", "Empty"),
        "RemovePodSandbox": ("RuntimeService", "PodSandboxIdRequest", "Empty"),
        "PodSandboxStatus": ("RuntimeService", "PodSandboxIdRequest", "PodSandboxStatusResponse"),
        "CreateContainer": ("RuntimeService", "CreateContainerRequest",
                            "CreateContainerResponse"),
        "StartContainer": ("RuntimeService", "ContainerIdRequest", "Empty"),
        "StopContainer": ("RuntimeService", "StopContainerRequest", "Empty"),
        "RemoveContainer": ("RuntimeService", "ContainerIdRequest", "Empty"),
        "ContainerStatus": ("RuntimeService", "ContainerIdRequest", "ContainerStatusResponse"),
        "ExecSync": ("RuntimeService", "ExecSyncRequest", "ExecSyncResponse"),
        "Exec": ("RuntimeService", "ExecRequest", "StreamUrlResponse"),
        "Attach": ("RuntimeService", "AttachRequest", "StreamUrlResponse"),
        "PortForward": ("RuntimeService", "PortForwardRequest", "StreamUrlResponse"),
        "ContainerStats": ("RuntimeService", "ContainerIdRequest", "ContainerStatsResponse"),
        "ImageStatus": ("ImageService", "ImageStatusRequest", "ImageStatusResponse"),
    }

    def __init__(self, socket_path):
        self.channel = grpc.insecure_channel("unix://" + socket_path)
        self.version = None

    def close(self):
        self.channel.close()

    def _call(self, version, method, request, timeout):
        service, req_type, resp_type = self.CALLS[method]
        stub = self.channel.unary_unary(f"/runtime.{version}.{service}/{method}",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
        return decode(resp_type, stub(encode(req_type, request), timeout=timeout))

    def negotiate(self, timeout=10):
        """The API version the server serves, v1 preferred; raises
        grpc.RpcError when it serves neither."""
        last = None
        for version in ("v1", "v1alpha2"):
            try:
                answer = self._call(version, "Version", {"version": version}, timeout)
                self.version = version
                return version, answer
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                last = e
        raise last

    def __getattr__(self, method):
        if method not in self.CALLS:
            raise AttributeError(method)

        # The gRPC deadline is `deadline`: StopContainer's and ExecSync's own
        # fields are called timeout.
        def call(request=None, deadline=120, **fields):
            return self._call(self.version, method, request or fields, deadline)
        return call
