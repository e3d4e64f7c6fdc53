-- SHA-256 (FIPS 180-4) in pure Lua 5.1 with Redis's 'bit' library, prepended to every script
-- by controller/store/scripts.py before _lib.lua. Redis's Lua has redis.sha1hex but no
-- SHA-256; the journal's hash chain (docs/journal.md) must be computed inside the script that
-- writes the entry, so it is written here. sha256_hex(message) answers the 64 lowercase hex
-- digits of the digest of the byte string 'message'; tests/unit/test_sha256_lua.py holds it
-- equal to Python's hashlib.
--
-- Words are the 'bit' library's signed 32-bit integers; a sum of a few words (well inside
-- the 2^53 doubles keep exactly) is brought back to 32 bits with bit.tobit.
local sha256_hex
do
  local band, bor, bxor, rshift, lshift, ror, tobit, tohex =
    bit.band, bit.bor, bit.bxor, bit.rshift, bit.lshift, bit.ror, bit.tobit, bit.tohex
  local byte, char, rep, floor = string.byte, string.char, string.rep, math.floor

  local K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
  }
  for i = 1, 64 do
    K[i] = tobit(K[i])
  end
  local H0 = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
    0x1f83d9ab, 0x5be0cd19}
  for i = 1, 8 do
    H0[i] = tobit(H0[i])
  end

  -- The 8 big-endian bytes of a bit length below 2^53.
  local function length_bytes(bits)
    local high, low = floor(bits / 4294967296), bits % 4294967296
    return char(floor(high / 16777216) % 256, floor(high / 65536) % 256,
      floor(high / 256) % 256, high % 256, floor(low / 16777216) % 256,
      floor(low / 65536) % 256, floor(low / 256) % 256, low % 256)
  end

  sha256_hex = function(message)
    local length = #message
    message = message .. '\128' .. rep('\0', (55 - length) % 64) .. length_bytes(length * 8)
    local h1, h2, h3, h4, h5, h6, h7, h8 = H0[1], H0[2], H0[3], H0[4], H0[5], H0[6], H0[7],
      H0[8]
    local w = {}
    for offset = 0, #message - 1, 64 do
      for i = 1, 16 do
        local p = offset + i * 4
        local b1, b2, b3, b4 = byte(message, p - 3, p)
        w[i] = bor(lshift(b1, 24), lshift(b2, 16), lshift(b3, 8), b4)
      end
      for i = 17, 64 do
        local x, y = w[i - 15], w[i - 2]
        w[i] = tobit(w[i - 16] + bxor(ror(x, 7), ror(x, 18), rshift(x, 3)) + w[i - 7]
          + bxor(ror(y, 17), ror(y, 19), rshift(y, 10)))
      end
      local a, b, c, d, e, f, g, h = h1, h2, h3, h4, h5, h6, h7, h8
      for i = 1, 64 do
        local t1 = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
          + K[i] + w[i]
        local t2 = bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + bor(band(a, b), band(c, bor(a, b)))
        h, g, f, e, d, c, b, a = g, f, e, tobit(d + t1), c, b, a, tobit(t1 + t2)
      end
      h1, h2, h3, h4 = tobit(h1 + a), tobit(h2 + b), tobit(h3 + c), tobit(h4 + d)
      h5, h6, h7, h8 = tobit(h5 + e), tobit(h6 + f), tobit(h7 + g), tobit(h8 + h)
    end
    return tohex(h1, 8) .. tohex(h2, 8) .. tohex(h3, 8) .. tohex(h4, 8) .. tohex(h5, 8)
      .. tohex(h6, 8) .. tohex(h7, 8) .. tohex(h8, 8)
  end
end
