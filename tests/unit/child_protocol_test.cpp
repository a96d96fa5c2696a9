// runtime/child/child_protocol.h: the supervisor's reading of the sync
// socket. A child that fails and exits with "go" or "placed" unread leaves
// its failure queued behind a reset the kernel reports first; the cause must
// still be read.
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include "base/unique_fd.h"
#include "runtime/child/child_protocol.h"

using namespace stockade;

namespace {

struct SyncPair {
    UniqueFd supervisor, child;
};

SyncPair syncPair() {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) == 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

ChildMessage failure(ChildStage stage, int err) {
    ChildMessage msg{};
    msg.kind = ChildMessageKind::SetupFailed;
    msg.stage = stage;
    msg.err = err;
    msg.op_index = -1;
    setCallInChild(msg, "mount(\"/usr\")");
    return msg;
}

}  // namespace

TEST_CASE("a child that exits with the supervisor's byte unread still has its failure read") {
    auto pair = syncPair();
    const ChildMessage sent = failure(ChildStage::BuildRoot, EACCES);
    REQUIRE(send(pair.child.get(), &sent, sizeof(sent), 0) == sizeof(sent));
    char go = 1;
    REQUIRE(send(pair.supervisor.get(), &go, 1, 0) == 1);  // never read by the child
    pair.child.reset();                                    // the child exits

    ChildMessage got{};
    REQUIRE(receiveChildMessage(pair.supervisor.get(), got) == sizeof(got));
    CHECK(got.kind == ChildMessageKind::SetupFailed);
    CHECK(got.stage == ChildStage::BuildRoot);
    CHECK(got.err == EACCES);
    CHECK(std::string(got.call) == "mount(\"/usr\")");
    CHECK(receiveChildMessage(pair.supervisor.get(), got) == 0);  // then the end
}

TEST_CASE(
    "the kernel reports that reset before the queued message, which is why it is passed over") {
    // What receiveChildMessage stands on: a plain recv first sees ECONNRESET,
    // then the message. Should a kernel stop doing so, this case says the
    // retry has become dead code rather than letting it pass unnoticed.
    auto pair = syncPair();
    const ChildMessage sent = failure(ChildStage::Seccomp, EINVAL);
    REQUIRE(send(pair.child.get(), &sent, sizeof(sent), 0) == sizeof(sent));
    char go = 1;
    REQUIRE(send(pair.supervisor.get(), &go, 1, 0) == 1);
    pair.child.reset();

    ChildMessage got{};
    errno = 0;
    CHECK(recv(pair.supervisor.get(), &got, sizeof(got), MSG_DONTWAIT) == -1);
    CHECK(errno == ECONNRESET);
    CHECK(recv(pair.supervisor.get(), &got, sizeof(got), MSG_DONTWAIT) == sizeof(got));
    CHECK(got.stage == ChildStage::Seccomp);
}

TEST_CASE("with nothing queued and the child alive, the read says so and does not block") {
    auto pair = syncPair();
    ChildMessage got{};
    errno = 0;
    CHECK(receiveChildMessage(pair.supervisor.get(), got) == -1);
    CHECK(errno == EAGAIN);
}
