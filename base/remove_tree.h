// Removing a directory tree a hostile writer may have filled, by fd.
#pragma once

#include <string>

namespace stockade {

// Removes `name` beneath `dir_fd` and, when it is a directory, everything in
// it, depth first, never following a link, bounded in depth (64): the bound
// keeps a hostile tree from exhausting the fds or the stack.
void removeTreeAt(int dir_fd, const std::string& name);

}  // namespace stockade
