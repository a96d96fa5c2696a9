// Network namespace, child side (G1): a fresh namespace holds only `lo`, and
// it is down; bring it up so the sandbox can talk to itself and nothing else.
#pragma once

namespace stockade::ns {

int bringLoopbackUpInChild() noexcept;

}  // namespace stockade::ns
