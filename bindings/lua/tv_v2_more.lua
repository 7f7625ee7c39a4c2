-- transforms.v2's transforms of boxes and keypoints (convert, clamp, sanitize), CutMix and
-- MixUp, and its other new transforms (JPEG, GaussianNoise, RGB, RandomChannelPermutation, ...).
return function(v2, T, H)
end
