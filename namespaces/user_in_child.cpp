#include "namespaces/user_in_child.h"

#include <unistd.h>

namespace stockade::ns {

int holdUserNamespaceInChild(void* arg) noexcept {
    const int* hold = static_cast<const int*>(arg);
    // Our copy of the write end must go, else read() never sees EOF.
    close(hold[1]);
    char byte;
    (void)!read(hold[0], &byte, 1);
    return 0;
}

}  // namespace stockade::ns
