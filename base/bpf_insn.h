// One eBPF instruction (struct bpf_insn, <linux/bpf.h>), for the small
// programs stockade hands the kernel by hand: the listener's bind and
// connect programs (runtime/net/listener_cgroup.cpp) and an OCI container's
// device program (oci/device_cgroup.cpp). The uapi header has the opcodes
// but not the kernel's instruction macros.
#pragma once

#include <linux/bpf.h>

#include <cstdint>

namespace stockade {

inline bpf_insn bpfInstruction(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
    bpf_insn i{};
    i.code = code;
    i.dst_reg = dst;
    i.src_reg = src;
    i.off = off;
    i.imm = imm;
    return i;
}

}  // namespace stockade
