// Incremental SHA-1 and SHA-256 through nettle, and hex output. SHA-1 is here
// only because git names its objects with it; everything stockade itself
// vouches for (held files, .git) uses SHA-256.
#pragma once

#include <nettle/sha1.h>
#include <nettle/sha2.h>

#include <string>
#include <string_view>

namespace stockade::oracle {

// Lowercase hex of raw bytes.
std::string toHex(std::string_view bytes);

class Sha1 {
  public:
    Sha1() { sha1_init(&ctx_); }
    void update(std::string_view bytes);
    std::string hexDigest();  // finishes; the object is spent afterwards
    std::string rawDigest();  // 20 bytes, as git stores ids inside trees

  private:
    sha1_ctx ctx_;
};

class Sha256 {
  public:
    Sha256() { sha256_init(&ctx_); }
    void update(std::string_view bytes);
    std::string hexDigest();  // finishes; the object is spent afterwards

  private:
    sha256_ctx ctx_;
};

}  // namespace stockade::oracle
