-- hashlib (OpenSSL's digests under Python's names) against the standards' published test vectors.
local T = ...
local hashlib = require "hashlib"

local empty = {
  md5 = "d41d8cd98f00b204e9800998ecf8427e",
  sha1 = "da39a3ee5e6b4b0d3255bfef95601890afd80709",
  sha224 = "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f",
  sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  sha384 = "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b",
  sha512 = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
  sha3_256 = "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a",
  blake2s = "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9",
}

T.test("digests of the empty message", function()
  for name, want in pairs(empty) do
    T.eq(hashlib.new(name):hexdigest(), want, name)
    T.eq(hashlib[name]():hexdigest(), want, name .. " constructor")
    T.eq(#hashlib[name]():digest(), #want // 2, name .. " raw digest length")
  end
end)

T.test("FIPS 180 vectors, incremental updates, copy", function()
  T.eq(hashlib.sha256("abc"):hexdigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  T.eq(hashlib.md5("abc"):hexdigest(), "900150983cd24fb0d6963f7d28e17f72")
  local h = hashlib.sha256()
  local chunk = string.rep("a", 1000)
  for _ = 1, 1000 do h:update(chunk) end
  T.eq(h:hexdigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "a million a's")
  local a = hashlib.new("SHA256", "a")
  local b = a:copy()
  a:update("bc")
  T.eq(a:hexdigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  T.eq(b:hexdigest(), hashlib.sha256("a"):hexdigest(), "the copy kept its own state")
  T.eq(a:hexdigest(), a:hexdigest(), "a digest leaves the object usable")
  T.eq({a.name, a.digest_size, a.block_size}, {"sha256", 32, 64})
end)

T.test("file_digest and errors", function()
  local path = os.tmpname()
  local f = io.open(path, "wb")
  f:write(string.rep("xyz", 50000))
  f:close()
  local want = hashlib.sha1(string.rep("xyz", 50000)):hexdigest()
  T.eq(hashlib.file_digest(path, "sha1"):hexdigest(), want)
  f = io.open(path, "rb")
  T.eq(hashlib.file_digest(f, "sha1"):hexdigest(), want, "an open file")
  f:close()
  os.remove(path)
  T.raises(function() hashlib.file_digest(path, "sha1") end, "~cannot open")
  T.raises(function() hashlib.new("sha999") end, "unsupported hash type sha999")
  T.raises(function() hashlib.sha1(3) end, "object supporting the buffer API required (a Lua string of bytes), got number")
  T.check(#hashlib.algorithms_available >= 12)
end)
