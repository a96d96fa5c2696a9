"""The CRI plugin's streaming calls (Exec, Attach, PortForward), spoken as
kubectl's WebSocket clients speak them, for tests/oci/cri.py.

Each call answers with a URL of the plugin's stream server (on the test
namespace's 127.0.0.1, cri_setup's stream_server_address); the stream is a
WebSocket there, subprotocol v4.channel.k8s.io (python3-websocket), each
binary message one channel's bytes after a channel byte. Exec and Attach:
0 stdin, 1 stdout, 2 stderr, 3 the ending (a Kubernetes Status in JSON),
4 the terminal's size. PortForward: a data and an error channel per port
asked, each opened by the server with the port in two little-endian bytes.
The server closes the WebSocket when the process, or the forwarded
connection, has ended.
"""
import json
import socket

STDIN, STDOUT, STDERR, STATUS, RESIZE = range(5)


class Stream:
    """One WebSocket stream: send to a channel, read every channel's bytes
    until the server closes (or `timeout` seconds pass without a frame)."""

    def __init__(self, url, timeout=30):
        import websocket
        self._closed_error = websocket.WebSocketConnectionClosedException
        self.ws = websocket.create_connection(url.replace("http://", "ws://", 1),
                                              timeout=timeout,
                                              subprotocols=["v4.channel.k8s.io"])
        self.got = {}
        self.closed = False

    def send(self, channel, data):
        self.ws.send_binary(bytes([channel]) + data)

    def read_to_close(self):
        """Every frame until the server's close: {channel: bytes}."""
        import websocket
        while not self.closed:
            try:
                opcode, data = self.ws.recv_data()
            except (self._closed_error, socket.timeout, OSError):
                break
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                break
            if data:
                self.got[data[0]] = self.got.get(data[0], b"") + bytes(data[1:])
        self.closed = True
        self.ws.close()
        return self.got


def exit_code(status):
    """The exit code a v4 stream's status channel says: 0 for Success, the
    ExitCode cause's for NonZeroExitCode, else the raw text."""
    try:
        answer = json.loads(status)
    except ValueError:
        return status
    if answer.get("status") == "Success":
        return 0
    for cause in (answer.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            return int(cause.get("message", "-1"))
    return status


def tty_lines(data):
    """A terminal's output as lines (its \\r\\n ends made \\n)."""
    return data.decode(errors="replace").replace("\r\n", "\n").splitlines()


def exec_streams(cri, cid):
    """kubectl exec -i and exec -it into a running container: what the
    client reads on each channel, and the exit code the status gives."""
    seen = {}
    url = cri.Exec(container_id=cid, stdin=True, stdout=True, stderr=True,
                   cmd=["/bin/sh", "-c", 'read line; echo "got:$line"; echo err-line >&2; exit 5'])
    s = Stream(url["url"])
    s.send(STDIN, b"hello\n")
    got = s.read_to_close()
    seen["exec-stream"] = (got.get(STDOUT, b""), got.get(STDERR, b""),
                           exit_code(got.get(STATUS, b"")))
    # With a terminal: stderr is the terminal too (the plugin refuses
    # both); the size is sent before the line the command waits for, and
    # the command waits until the resize has reached its terminal (the
    # shim applies it on its own; until then busybox's `stty size` fails,
    # silently here, on a 0x0 terminal: seen once in CI).
    url = cri.Exec(container_id=cid, stdin=True, stdout=True, tty=True,
                   cmd=["/bin/sh", "-c",
                        'read x; n=0; s=$(stty size 2>/dev/null); '
                        'while { [ -z "$s" ] || [ "$s" = "0 0" ]; } && [ $n -lt 100 ]; '
                        'do sleep 0.1; s=$(stty size 2>/dev/null); n=$((n+1)); done; '
                        'tty; echo "size:$s"; test -t 0 && test -t 2 && echo in-tty; exit 2'])
    s = Stream(url["url"])
    s.send(RESIZE, json.dumps({"Width": 100, "Height": 40}).encode())
    s.send(STDIN, b"go\n")
    got = s.read_to_close()
    seen["exec-tty"] = (tty_lines(got.get(STDOUT, b"")), STDERR in got,
                        exit_code(got.get(STATUS, b"")))
    return seen


def attach_stream(pod):
    """kubectl attach -i to a container made with stdin (stdin_once, as
    kubectl run -i makes one): a line in, its answer out, its exit code in
    ContainerStatus and its output in the log."""
    from cri_client import CONTAINER_EXITED, CONTAINER_RUNNING
    from oci_common import wait_for
    cid = pod.container("attach", ["/bin/sh", "-c",
                                   'read line; echo "attached:$line"; echo attach-err >&2; exit 6'],
                        stdin=True, stdin_once=True)
    pod.cri.StartContainer(container_id=cid)
    wait_for(lambda: pod.status(cid)["state"] == CONTAINER_RUNNING)
    url = pod.cri.Attach(container_id=cid, stdin=True, stdout=True, stderr=True)
    s = Stream(url["url"])
    s.send(STDIN, b"hi\n")
    got = s.read_to_close()
    wait_for(lambda: pod.status(cid)["state"] == CONTAINER_EXITED, 60)
    st = pod.status(cid)
    return (got.get(STDOUT, b""), got.get(STDERR, b""), exit_code(got.get(STATUS, b"")),
            st["state"], st["exit_code"], sorted(pod.log("attach")))


def port_forward(cri, pod_id, port, request):
    """kubectl port-forward's one connection: request sent to the pod's
    port, through the plugin (which dials localhost in the pod's network
    namespace); (the ports the two channels opened with, the answer)."""
    url = cri.PortForward(pod_sandbox_id=pod_id, port=[port])
    s = Stream(url["url"])
    s.send(0, request)
    got = s.read_to_close()
    data, errors = got.get(0, b""), got.get(1, b"")
    opened = (int.from_bytes(data[:2], "little") if len(data) >= 2 else None,
              int.from_bytes(errors[:2], "little") if len(errors) >= 2 else None)
    return opened, data[2:], errors[2:]
