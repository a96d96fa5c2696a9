// The runc-compatible command line: global flags (--root, --log,
// --log-format, --systemd-cgroup, in any order before the command), then
// create, start, state, kill, delete, run, spec, list, features, --version.
// Error texts are runc's where clients match them ("does not exist",
// "container not running", "no such process").
#pragma once

namespace stockade::oci {

// Whether argv asks for the OCI runtime rather than stockade's own
// commands: an OCI global flag first, a command only the OCI runtime has,
// `run` with --bundle, `ps` with a container id, or the binary invoked as
// stockade-oci.
bool isOciInvocation(int argc, char** argv);

int ociMain(int argc, char** argv);

}  // namespace stockade::oci
