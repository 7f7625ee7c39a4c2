-- torchvision.datasets.utils: md5 checks against md5sum's published vectors, listings of a folder
-- made here, verify_str_arg's messages, and downloads that say where the file goes.
local T = ...
local u = require("torchvision").datasets.utils

T.test("calculate_md5, check_md5, check_integrity", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir .. "/sub1 " .. dir .. "/sub2")
  local f = io.open(dir .. "/a.txt", "wb"); f:write("abc"); f:close()
  f = io.open(dir .. "/b.png", "wb"); f:write(""); f:close()
  T.eq(u.calculate_md5(dir .. "/a.txt"), "900150983cd24fb0d6963f7d28e17f72", "RFC 1321's md5('abc')")
  T.eq(u.calculate_md5(dir .. "/b.png", {chunk_size = 16}), "d41d8cd98f00b204e9800998ecf8427e", "md5 of nothing")
  T.check(u.check_md5(dir .. "/a.txt", "900150983cd24fb0d6963f7d28e17f72"))
  T.check(not u.check_md5(dir .. "/a.txt", "00000000000000000000000000000000"))
  T.check(u.check_integrity(dir .. "/a.txt") and u.check_integrity(dir .. "/a.txt", "900150983cd24fb0d6963f7d28e17f72"))
  T.check(not u.check_integrity(dir .. "/missing.txt"), "a missing file")
  T.check(not u.check_integrity(dir .. "/a.txt", "1234"), "a wrong md5")
  T.check(not u.check_integrity(dir .. "/sub1"), "a folder is not a file")
  T.eq(u.list_dir(dir), {"sub1", "sub2"})
  T.eq(u.list_dir(dir, true), {dir .. "/sub1", dir .. "/sub2"})
  T.eq(u.list_files(dir, ".txt"), {"a.txt"})
  T.eq(u.list_files(dir, {".png", ".txt"}, {prefix = true}), {dir .. "/a.txt", dir .. "/b.png"})
  os.execute("rm -rf " .. dir)
end)

T.test("verify_str_arg and downloads", function()
  T.eq(u.verify_str_arg("train", "split", {"train", "test"}), "train")
  T.raises(function() u.verify_str_arg("val", "split", {"train", "test"}) end,
    "Unknown value 'val' for argument split. Valid values are {'train', 'test'}.")
  T.raises(function() u.verify_str_arg(3, "split") end, "Expected type str for argument split, but got type int.")
  T.raises(function() u.verify_str_arg("x", "a", {"y"}, "my message") end, "my message")
  T.raises(function() u.download_url("https://host/data/file.tgz?x=1", "/data") end,
    "download_url: nnrepl downloads nothing at run time: fetch https://host/data/file.tgz?x=1 on a machine with network and put it in /data as file.tgz")
  T.raises(function() u.download_and_extract_archive("https://h/a.zip", "/d", "b.zip") end, "~put it in /d as b.zip")
end)
