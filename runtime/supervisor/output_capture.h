// One captured stream (SPEC §4): counted and SHA-256 hashed in full while it
// streams, its last 4 KiB kept for the result. Memory is fixed however much
// the command prints. Nettle, not OpenSSL: no library initialization at
// process start (SPEC §9), and it uses the CPU's SHA extensions when present.
#pragma once

#include <nettle/sha2.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stockade {

struct StreamSummary {
    uint64_t bytes = 0;
    std::string sha256;  // lowercase hex
    std::string tail;    // the last up-to-4096 bytes
    bool truncated = false;
};

class OutputCapture {
  public:
    static constexpr size_t kTailBytes = 4096;

    OutputCapture();
    void feed(const char* data, size_t size);
    // Marks the stream as cut short (the output limit stopped it).
    void markTruncated() { truncated_ = true; }
    uint64_t bytes() const { return bytes_; }
    StreamSummary finish();

  private:
    sha256_ctx hash_;
    std::array<char, kTailBytes> tail_{};
    size_t tail_start_ = 0;  // ring buffer: oldest byte
    size_t tail_size_ = 0;
    uint64_t bytes_ = 0;
    bool truncated_ = false;
};

}  // namespace stockade
