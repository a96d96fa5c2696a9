// The HOME a process gets when its env names none, as runc and crun give it
// (a shell, git, npm and pip read it): the home directory of the process's
// uid in the container's /etc/passwd, "/" when the file holds no entry for
// it (or none can be read).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace stockade::oci {

// A passwd file is read up to this many bytes; a larger one is not read.
inline constexpr size_t kMaxPasswdBytes = size_t{1} << 20;

// The home of the first entry of `passwd` whose uid is `uid`; "/" when there
// is none, or its home is empty or not absolute.
std::string homeOfUid(std::string_view passwd, uid_t uid);

// The name of the first entry of `passwd` whose uid is `uid`; "#UID" when
// there is none (runc's `list` names an owner so).
std::string nameOfUid(std::string_view passwd, uid_t uid);

// The image's /etc/passwd beneath `root_fd` (symlinks resolved in the root,
// never out of it, no magic link): its text when it is a regular file of at
// most kMaxPasswdBytes, "" otherwise. Opened O_PATH and judged by fstat
// before it is opened to be read, so a FIFO or a device there is never
// opened.
std::string readImagePasswd(int root_fd);

// `/etc/passwd` as the calling process sees it (the container's, from a
// process already in its mount namespace and root), with the same checks.
std::string readOwnPasswd();

// Adds HOME=... to `env` when no entry of it names HOME, or the last one is
// empty (as runc reads it; the empty ones are then dropped).
void addHomeIfMissing(std::vector<std::string>& env, uid_t uid, const std::string& passwd);

bool envHasHome(const std::vector<std::string>& env);
// Only the last HOME entry kept, where several are (at the end of `env`):
// the process would read the first.
void keepLastHome(std::vector<std::string>& env);

}  // namespace stockade::oci
