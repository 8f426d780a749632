"""Stand-in GPU sheet."""
GPU_SPEC_INFO = {
    "Stand-in GPU": {"GPU Architecture": "Standin", "Memory Bandwidth": "1 TB/s"},
    "Other GPU": {"GPU Architecture": "Other"},
}
