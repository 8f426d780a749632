class ModelNew: pass  # stand-in few-shot kernel
