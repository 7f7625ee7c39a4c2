-- torchvision.get_image_backend / set_image_backend and get_video_backend / set_video_backend,
-- with torchvision's names and checks. nnrepl decodes images itself (the "PIL" backend: its PIL
-- module); accimage and the video decoders are not built in, so choosing them is an error
-- that says so.
local U = require "nn_util"

return function(torchvision)
  local image_backend, video_backend = "PIL", "pyav"

  function torchvision.get_image_backend() return image_backend end
  function torchvision.set_image_backend(backend)
    if backend ~= "PIL" and backend ~= "accimage" then
      U.errorf("Invalid backend '%s'. Options are 'PIL' and 'accimage'", tostring(backend))
    end
    if backend == "accimage" then
      U.error("set_image_backend: the accimage backend is not available in nnrepl; images are decoded by its PIL backend")
    end
    image_backend = backend
  end

  function torchvision.get_video_backend() return video_backend end
  function torchvision.set_video_backend(backend)
    if backend ~= "pyav" and backend ~= "video_reader" and backend ~= "cuda" then
      U.errorf("Invalid video backend '%s'. Options are 'pyav', 'video_reader' and 'cuda'", tostring(backend))
    end
    if backend == "video_reader" then
      U.error("video_reader video backend is not available. nnrepl has no video decoder built in")
    elseif backend == "cuda" then
      U.error("cuda video backend is not available. nnrepl has no video decoder built in")
    end
    video_backend = backend
  end
end
