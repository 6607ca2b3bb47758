"""Input fields a processor keeps in host memory (vLLM's `keep_on_cpu=True`), read by an encoder
in another module (`encoder.py`). `feature_mask` is kept on the host by one processor and not by
another: where it is read, it may be a device tensor."""


class ImageProcessor:
    def fields_config(self):
        return dict(
            pixel_values=MultiModalFieldConfig.batched("image"),
            image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
            feature_mask=MultiModalFieldConfig.batched("audio", keep_on_cpu=True),
        )


class AudioProcessor:
    def fields_config(self):
        return {"feature_mask": MultiModalFieldConfig.batched("audio")}
