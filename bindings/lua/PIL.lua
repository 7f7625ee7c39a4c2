-- `local Image = require("PIL").Image` ports `from PIL import Image`: the PIL-like
-- images of torchvision.io (bindings/lua/tv_io.lua).
return {Image = require("tv_io").Image}
