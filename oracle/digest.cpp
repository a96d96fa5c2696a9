#include "oracle/digest.h"

#include <cstdint>

namespace stockade::oracle {

std::string toHex(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(bytes.size() * 2);
    for (unsigned char byte : bytes) {
        hex.push_back(kDigits[byte >> 4]);
        hex.push_back(kDigits[byte & 0xf]);
    }
    return hex;
}

void Sha1::update(std::string_view bytes) {
    sha1_update(&ctx_, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
}

std::string Sha1::rawDigest() {
    std::string raw(SHA1_DIGEST_SIZE, '\0');
    sha1_digest(&ctx_, raw.size(), reinterpret_cast<uint8_t*>(raw.data()));
    return raw;
}

std::string Sha1::hexDigest() {
    return toHex(rawDigest());
}

void Sha256::update(std::string_view bytes) {
    sha256_update(&ctx_, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
}

std::string Sha256::hexDigest() {
    std::string raw(SHA256_DIGEST_SIZE, '\0');
    sha256_digest(&ctx_, raw.size(), reinterpret_cast<uint8_t*>(raw.data()));
    return toHex(raw);
}

}  // namespace stockade::oracle
