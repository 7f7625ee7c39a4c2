-- the geometric transforms.v2 classes and functionals (flips, resize, crops, pad, affine,
-- rotate, perspective, elastic, zoom-out, IoU crop, scale jitter) on images, videos, masks, boxes and keypoints.
return function(v2, T, H)
end
