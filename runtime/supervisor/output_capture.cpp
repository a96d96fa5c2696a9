#include "runtime/supervisor/output_capture.h"

#include <algorithm>
#include <cstring>

namespace stockade {

OutputCapture::OutputCapture() {
    sha256_init(&hash_);
}

void OutputCapture::feed(const char* data, size_t size) {
    sha256_update(&hash_, size, reinterpret_cast<const uint8_t*>(data));
    bytes_ += size;
    if (size >= kTailBytes) {
        std::memcpy(tail_.data(), data + size - kTailBytes, kTailBytes);
        tail_start_ = 0;
        tail_size_ = kTailBytes;
        return;
    }
    // Append to the ring, overwriting the oldest bytes when full.
    size_t write_pos = (tail_start_ + tail_size_) % kTailBytes;
    size_t first = std::min(size, kTailBytes - write_pos);
    std::memcpy(tail_.data() + write_pos, data, first);
    std::memcpy(tail_.data(), data + first, size - first);
    size_t overflow = tail_size_ + size > kTailBytes ? tail_size_ + size - kTailBytes : 0;
    tail_size_ = std::min(kTailBytes, tail_size_ + size);
    tail_start_ = (tail_start_ + overflow) % kTailBytes;
}

StreamSummary OutputCapture::finish() {
    StreamSummary out;
    out.bytes = bytes_;
    out.truncated = truncated_;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&hash_, sizeof(digest), digest);
    static const char* hex = "0123456789abcdef";
    out.sha256.reserve(2 * sizeof(digest));
    for (uint8_t b : digest) {
        out.sha256.push_back(hex[b >> 4]);
        out.sha256.push_back(hex[b & 15]);
    }
    out.tail.reserve(tail_size_);
    for (size_t i = 0; i < tail_size_; ++i)
        out.tail.push_back(tail_[(tail_start_ + i) % kTailBytes]);
    return out;
}

}  // namespace stockade
