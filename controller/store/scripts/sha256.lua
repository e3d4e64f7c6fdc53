-- SHA-256 (FIPS 180-4) in pure Lua 5.1 with Redis's 'bit' library, prepended to every script
-- by controller/store/scripts.py before _lib.lua. Redis's Lua has redis.sha1hex but no
-- SHA-256; the journal's hash chain (docs/journal.md) must be computed inside the script that
-- writes the entry, so it is written here.
--
--   SHA256_START                   the state before any byte: {bytes = 0, words = {8 words}}
--   sha256_absorb(state, data)     the state once 'data' (a multiple of 64 bytes) followed
--                                  the bytes that led to 'state'
--   sha256_finish(state, message)  the digest of the bytes that led to 'state' followed by
--                                  'message': its 64 lowercase hex digits, and its 32 bytes
--
-- so sha256_finish(SHA256_START, m) is SHA-256(m), and a prefix many messages share is hashed
-- once. tests/integration/test_sha256_lua.py holds them equal to Python's hashlib.
--
-- It is written for the speed of Redis's interpreter (no JIT), where a call of a 'bit'
-- function costs as much as several arithmetic steps: the 64 rounds and the message
-- schedule are unrolled (the eight working variables take turns instead of moving, the
-- constants are literals, the schedule is 64 locals; the lines of round i differ from those
-- of round 1 only in these); Maj is (a & b) + (c & (a ^ b)), the two terms having no bit in
-- common, with a ^ b as a + b - 2(a & b); and sums are not brought back to 32 bits inside a
-- block. That is exact: the 'bit' functions read any integer below 2^51 modulo 2^32, and no
-- value inside a block passes 2^48 (a schedule word stays below 2^39 and a working variable
-- below 2^47 when every term is at its bound). The state is reduced once per block.
local SHA256_START, sha256_absorb, sha256_finish
do
  local band, bxor, rshift, ror, tobit = bit.band, bit.bxor, bit.rshift, bit.ror, bit.tobit
  local byte, char, rep, format = string.byte, string.char, string.rep, string.format

  -- The state after the 64-byte blocks of 'data' follow the state h1..h8.
  local function blocks(data, h1, h2, h3, h4, h5, h6, h7, h8)
    local band, bxor, rshift, ror = band, bxor, rshift, ror
    for o = 1, #data - 63, 64 do
      local w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, w12, w13, w14, w15, w16
      do
        local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16
          = byte(data, o, o + 15)
        w1 = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
        w2 = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
        w3 = ((b9 * 256 + b10) * 256 + b11) * 256 + b12
        w4 = ((b13 * 256 + b14) * 256 + b15) * 256 + b16
      end
      do
        local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16
          = byte(data, o + 16, o + 31)
        w5 = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
        w6 = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
        w7 = ((b9 * 256 + b10) * 256 + b11) * 256 + b12
        w8 = ((b13 * 256 + b14) * 256 + b15) * 256 + b16
      end
      do
        local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16
          = byte(data, o + 32, o + 47)
        w9 = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
        w10 = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
        w11 = ((b9 * 256 + b10) * 256 + b11) * 256 + b12
        w12 = ((b13 * 256 + b14) * 256 + b15) * 256 + b16
      end
      do
        local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16
          = byte(data, o + 48, o + 63)
        w13 = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
        w14 = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
        w15 = ((b9 * 256 + b10) * 256 + b11) * 256 + b12
        w16 = ((b13 * 256 + b14) * 256 + b15) * 256 + b16
      end
      local w17 = w1 + w10 + bxor(ror(w2, 7), ror(w2, 18), rshift(w2, 3))
        + bxor(ror(w15, 17), ror(w15, 19), rshift(w15, 10))
      local w18 = w2 + w11 + bxor(ror(w3, 7), ror(w3, 18), rshift(w3, 3))
        + bxor(ror(w16, 17), ror(w16, 19), rshift(w16, 10))
      local w19 = w3 + w12 + bxor(ror(w4, 7), ror(w4, 18), rshift(w4, 3))
        + bxor(ror(w17, 17), ror(w17, 19), rshift(w17, 10))
      local w20 = w4 + w13 + bxor(ror(w5, 7), ror(w5, 18), rshift(w5, 3))
        + bxor(ror(w18, 17), ror(w18, 19), rshift(w18, 10))
      local w21 = w5 + w14 + bxor(ror(w6, 7), ror(w6, 18), rshift(w6, 3))
        + bxor(ror(w19, 17), ror(w19, 19), rshift(w19, 10))
      local w22 = w6 + w15 + bxor(ror(w7, 7), ror(w7, 18), rshift(w7, 3))
        + bxor(ror(w20, 17), ror(w20, 19), rshift(w20, 10))
      local w23 = w7 + w16 + bxor(ror(w8, 7), ror(w8, 18), rshift(w8, 3))
        + bxor(ror(w21, 17), ror(w21, 19), rshift(w21, 10))
      local w24 = w8 + w17 + bxor(ror(w9, 7), ror(w9, 18), rshift(w9, 3))
        + bxor(ror(w22, 17), ror(w22, 19), rshift(w22, 10))
      local w25 = w9 + w18 + bxor(ror(w10, 7), ror(w10, 18), rshift(w10, 3))
        + bxor(ror(w23, 17), ror(w23, 19), rshift(w23, 10))
      local w26 = w10 + w19 + bxor(ror(w11, 7), ror(w11, 18), rshift(w11, 3))
        + bxor(ror(w24, 17), ror(w24, 19), rshift(w24, 10))
      local w27 = w11 + w20 + bxor(ror(w12, 7), ror(w12, 18), rshift(w12, 3))
        + bxor(ror(w25, 17), ror(w25, 19), rshift(w25, 10))
      local w28 = w12 + w21 + bxor(ror(w13, 7), ror(w13, 18), rshift(w13, 3))
        + bxor(ror(w26, 17), ror(w26, 19), rshift(w26, 10))
      local w29 = w13 + w22 + bxor(ror(w14, 7), ror(w14, 18), rshift(w14, 3))
        + bxor(ror(w27, 17), ror(w27, 19), rshift(w27, 10))
      local w30 = w14 + w23 + bxor(ror(w15, 7), ror(w15, 18), rshift(w15, 3))
        + bxor(ror(w28, 17), ror(w28, 19), rshift(w28, 10))
      local w31 = w15 + w24 + bxor(ror(w16, 7), ror(w16, 18), rshift(w16, 3))
        + bxor(ror(w29, 17), ror(w29, 19), rshift(w29, 10))
      local w32 = w16 + w25 + bxor(ror(w17, 7), ror(w17, 18), rshift(w17, 3))
        + bxor(ror(w30, 17), ror(w30, 19), rshift(w30, 10))
      local w33 = w17 + w26 + bxor(ror(w18, 7), ror(w18, 18), rshift(w18, 3))
        + bxor(ror(w31, 17), ror(w31, 19), rshift(w31, 10))
      local w34 = w18 + w27 + bxor(ror(w19, 7), ror(w19, 18), rshift(w19, 3))
        + bxor(ror(w32, 17), ror(w32, 19), rshift(w32, 10))
      local w35 = w19 + w28 + bxor(ror(w20, 7), ror(w20, 18), rshift(w20, 3))
        + bxor(ror(w33, 17), ror(w33, 19), rshift(w33, 10))
      local w36 = w20 + w29 + bxor(ror(w21, 7), ror(w21, 18), rshift(w21, 3))
        + bxor(ror(w34, 17), ror(w34, 19), rshift(w34, 10))
      local w37 = w21 + w30 + bxor(ror(w22, 7), ror(w22, 18), rshift(w22, 3))
        + bxor(ror(w35, 17), ror(w35, 19), rshift(w35, 10))
      local w38 = w22 + w31 + bxor(ror(w23, 7), ror(w23, 18), rshift(w23, 3))
        + bxor(ror(w36, 17), ror(w36, 19), rshift(w36, 10))
      local w39 = w23 + w32 + bxor(ror(w24, 7), ror(w24, 18), rshift(w24, 3))
        + bxor(ror(w37, 17), ror(w37, 19), rshift(w37, 10))
      local w40 = w24 + w33 + bxor(ror(w25, 7), ror(w25, 18), rshift(w25, 3))
        + bxor(ror(w38, 17), ror(w38, 19), rshift(w38, 10))
      local w41 = w25 + w34 + bxor(ror(w26, 7), ror(w26, 18), rshift(w26, 3))
        + bxor(ror(w39, 17), ror(w39, 19), rshift(w39, 10))
      local w42 = w26 + w35 + bxor(ror(w27, 7), ror(w27, 18), rshift(w27, 3))
        + bxor(ror(w40, 17), ror(w40, 19), rshift(w40, 10))
      local w43 = w27 + w36 + bxor(ror(w28, 7), ror(w28, 18), rshift(w28, 3))
        + bxor(ror(w41, 17), ror(w41, 19), rshift(w41, 10))
      local w44 = w28 + w37 + bxor(ror(w29, 7), ror(w29, 18), rshift(w29, 3))
        + bxor(ror(w42, 17), ror(w42, 19), rshift(w42, 10))
      local w45 = w29 + w38 + bxor(ror(w30, 7), ror(w30, 18), rshift(w30, 3))
        + bxor(ror(w43, 17), ror(w43, 19), rshift(w43, 10))
      local w46 = w30 + w39 + bxor(ror(w31, 7), ror(w31, 18), rshift(w31, 3))
        + bxor(ror(w44, 17), ror(w44, 19), rshift(w44, 10))
      local w47 = w31 + w40 + bxor(ror(w32, 7), ror(w32, 18), rshift(w32, 3))
        + bxor(ror(w45, 17), ror(w45, 19), rshift(w45, 10))
      local w48 = w32 + w41 + bxor(ror(w33, 7), ror(w33, 18), rshift(w33, 3))
        + bxor(ror(w46, 17), ror(w46, 19), rshift(w46, 10))
      local w49 = w33 + w42 + bxor(ror(w34, 7), ror(w34, 18), rshift(w34, 3))
        + bxor(ror(w47, 17), ror(w47, 19), rshift(w47, 10))
      local w50 = w34 + w43 + bxor(ror(w35, 7), ror(w35, 18), rshift(w35, 3))
        + bxor(ror(w48, 17), ror(w48, 19), rshift(w48, 10))
      local w51 = w35 + w44 + bxor(ror(w36, 7), ror(w36, 18), rshift(w36, 3))
        + bxor(ror(w49, 17), ror(w49, 19), rshift(w49, 10))
      local w52 = w36 + w45 + bxor(ror(w37, 7), ror(w37, 18), rshift(w37, 3))
        + bxor(ror(w50, 17), ror(w50, 19), rshift(w50, 10))
      local w53 = w37 + w46 + bxor(ror(w38, 7), ror(w38, 18), rshift(w38, 3))
        + bxor(ror(w51, 17), ror(w51, 19), rshift(w51, 10))
      local w54 = w38 + w47 + bxor(ror(w39, 7), ror(w39, 18), rshift(w39, 3))
        + bxor(ror(w52, 17), ror(w52, 19), rshift(w52, 10))
      local w55 = w39 + w48 + bxor(ror(w40, 7), ror(w40, 18), rshift(w40, 3))
        + bxor(ror(w53, 17), ror(w53, 19), rshift(w53, 10))
      local w56 = w40 + w49 + bxor(ror(w41, 7), ror(w41, 18), rshift(w41, 3))
        + bxor(ror(w54, 17), ror(w54, 19), rshift(w54, 10))
      local w57 = w41 + w50 + bxor(ror(w42, 7), ror(w42, 18), rshift(w42, 3))
        + bxor(ror(w55, 17), ror(w55, 19), rshift(w55, 10))
      local w58 = w42 + w51 + bxor(ror(w43, 7), ror(w43, 18), rshift(w43, 3))
        + bxor(ror(w56, 17), ror(w56, 19), rshift(w56, 10))
      local w59 = w43 + w52 + bxor(ror(w44, 7), ror(w44, 18), rshift(w44, 3))
        + bxor(ror(w57, 17), ror(w57, 19), rshift(w57, 10))
      local w60 = w44 + w53 + bxor(ror(w45, 7), ror(w45, 18), rshift(w45, 3))
        + bxor(ror(w58, 17), ror(w58, 19), rshift(w58, 10))
      local w61 = w45 + w54 + bxor(ror(w46, 7), ror(w46, 18), rshift(w46, 3))
        + bxor(ror(w59, 17), ror(w59, 19), rshift(w59, 10))
      local w62 = w46 + w55 + bxor(ror(w47, 7), ror(w47, 18), rshift(w47, 3))
        + bxor(ror(w60, 17), ror(w60, 19), rshift(w60, 10))
      local w63 = w47 + w56 + bxor(ror(w48, 7), ror(w48, 18), rshift(w48, 3))
        + bxor(ror(w61, 17), ror(w61, 19), rshift(w61, 10))
      local w64 = w48 + w57 + bxor(ror(w49, 7), ror(w49, 18), rshift(w49, 3))
        + bxor(ror(w62, 17), ror(w62, 19), rshift(w62, 10))
      local a, b, c, d, e, f, g, h, t = h1, h2, h3, h4, h5, h6, h7, h8
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0x428a2f98 + w1
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0x71374491 + w2
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0xb5c0fbcf + w3
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0xe9b5dba5 + w4
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x3956c25b + w5
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0x59f111f1 + w6
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x923f82a4 + w7
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0xab1c5ed5 + w8
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0xd807aa98 + w9
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0x12835b01 + w10
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0x243185be + w11
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0x550c7dc3 + w12
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x72be5d74 + w13
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0x80deb1fe + w14
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x9bdc06a7 + w15
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0xc19bf174 + w16
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0xe49b69c1 + w17
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0xefbe4786 + w18
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0x0fc19dc6 + w19
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0x240ca1cc + w20
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x2de92c6f + w21
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0x4a7484aa + w22
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x5cb0a9dc + w23
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0x76f988da + w24
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0x983e5152 + w25
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0xa831c66d + w26
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0xb00327c8 + w27
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0xbf597fc7 + w28
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0xc6e00bf3 + w29
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0xd5a79147 + w30
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x06ca6351 + w31
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0x14292967 + w32
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0x27b70a85 + w33
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0x2e1b2138 + w34
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0x4d2c6dfc + w35
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0x53380d13 + w36
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x650a7354 + w37
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0x766a0abb + w38
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x81c2c92e + w39
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0x92722c85 + w40
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0xa2bfe8a1 + w41
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0xa81a664b + w42
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0xc24b8b70 + w43
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0xc76c51a3 + w44
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0xd192e819 + w45
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0xd6990624 + w46
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0xf40e3585 + w47
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0x106aa070 + w48
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0x19a4c116 + w49
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0x1e376c08 + w50
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0x2748774c + w51
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0x34b0bcb5 + w52
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x391c0cb3 + w53
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0x4ed8aa4a + w54
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0x5b9cca4f + w55
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0x682e6ff3 + w56
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h = h + bxor(ror(e, 6), ror(e, 11), ror(e, 25)) + bxor(g, band(e, bxor(f, g)))
        + 0x748f82ee + w57
      d, t = d + h, band(a, b)
      h = h + bxor(ror(a, 2), ror(a, 13), ror(a, 22)) + t + band(c, a + b - 2 * t)
      g = g + bxor(ror(d, 6), ror(d, 11), ror(d, 25)) + bxor(f, band(d, bxor(e, f)))
        + 0x78a5636f + w58
      c, t = c + g, band(h, a)
      g = g + bxor(ror(h, 2), ror(h, 13), ror(h, 22)) + t + band(b, h + a - 2 * t)
      f = f + bxor(ror(c, 6), ror(c, 11), ror(c, 25)) + bxor(e, band(c, bxor(d, e)))
        + 0x84c87814 + w59
      b, t = b + f, band(g, h)
      f = f + bxor(ror(g, 2), ror(g, 13), ror(g, 22)) + t + band(a, g + h - 2 * t)
      e = e + bxor(ror(b, 6), ror(b, 11), ror(b, 25)) + bxor(d, band(b, bxor(c, d)))
        + 0x8cc70208 + w60
      a, t = a + e, band(f, g)
      e = e + bxor(ror(f, 2), ror(f, 13), ror(f, 22)) + t + band(h, f + g - 2 * t)
      d = d + bxor(ror(a, 6), ror(a, 11), ror(a, 25)) + bxor(c, band(a, bxor(b, c)))
        + 0x90befffa + w61
      h, t = h + d, band(e, f)
      d = d + bxor(ror(e, 2), ror(e, 13), ror(e, 22)) + t + band(g, e + f - 2 * t)
      c = c + bxor(ror(h, 6), ror(h, 11), ror(h, 25)) + bxor(b, band(h, bxor(a, b)))
        + 0xa4506ceb + w62
      g, t = g + c, band(d, e)
      c = c + bxor(ror(d, 2), ror(d, 13), ror(d, 22)) + t + band(f, d + e - 2 * t)
      b = b + bxor(ror(g, 6), ror(g, 11), ror(g, 25)) + bxor(a, band(g, bxor(h, a)))
        + 0xbef9a3f7 + w63
      f, t = f + b, band(c, d)
      b = b + bxor(ror(c, 2), ror(c, 13), ror(c, 22)) + t + band(e, c + d - 2 * t)
      a = a + bxor(ror(f, 6), ror(f, 11), ror(f, 25)) + bxor(h, band(f, bxor(g, h)))
        + 0xc67178f2 + w64
      e, t = e + a, band(b, c)
      a = a + bxor(ror(b, 2), ror(b, 13), ror(b, 22)) + t + band(d, b + c - 2 * t)
      h1, h2, h3, h4 = tobit(h1 + a), tobit(h2 + b), tobit(h3 + c), tobit(h4 + d)
      h5, h6, h7, h8 = tobit(h5 + e), tobit(h6 + f), tobit(h7 + g), tobit(h8 + h)
    end
    return h1, h2, h3, h4, h5, h6, h7, h8
  end

  SHA256_START = {bytes = 0, words = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}}

  sha256_absorb = function(state, data)
    local w = state.words
    return {bytes = state.bytes + #data,
      words = {blocks(data, w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8])}}
  end

  -- The 4 bytes of x modulo 2^32 (x an integer of any sign), most significant first.
  local function word_bytes(x)
    x = x % 4294967296
    local b4 = x % 256
    x = (x - b4) / 256
    local b3 = x % 256
    x = (x - b3) / 256
    local b2 = x % 256
    return (x - b2) / 256, b2, b3, b4
  end

  sha256_finish = function(state, message)
    local length = state.bytes + #message  -- the padding ends with it in bits, as 8 bytes
    local high = (length - length % 536870912) / 536870912  -- 2^29 bytes are 2^32 bits
    local w = state.words
    local padded = message .. '\128' .. rep('\0', (55 - length) % 64) .. char(word_bytes(high))
      .. char(word_bytes(length * 8))
    local h1, h2, h3, h4, h5, h6, h7, h8 = blocks(padded, w[1], w[2], w[3], w[4], w[5], w[6],
      w[7], w[8])
    local m = 4294967296
    h1, h2, h3, h4, h5, h6, h7, h8 = h1 % m, h2 % m, h3 % m, h4 % m, h5 % m, h6 % m, h7 % m, h8 % m
    return format('%08x%08x%08x%08x%08x%08x%08x%08x', h1, h2, h3, h4, h5, h6, h7, h8),
      char(word_bytes(h1)) .. char(word_bytes(h2)) .. char(word_bytes(h3))
      .. char(word_bytes(h4)) .. char(word_bytes(h5)) .. char(word_bytes(h6))
      .. char(word_bytes(h7)) .. char(word_bytes(h8))
  end
end

-- SHA-256 of a whole message: its 64 lowercase hex digits (the mystery meters' draws and
-- commitments, _lib.lua).
local function sha256_hex(message)
  return (sha256_finish(SHA256_START, message))
end
