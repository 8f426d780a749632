"""Environment fingerprints: the software part anywhere, NVML through a stand-in, the real GPU when present."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
import torch

from cudaforge.eval import fingerprint
from cudaforge.eval.fingerprint import GPU_STATE_KEYS, GPU_STATIC_KEYS, environment_fingerprint, gpu_state

no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")

UUID = "GPU-12345678-1234-1234-1234-123456789abc"


class _NVMLError(Exception):
    pass


def _fake_nvml(devices: dict[str, int], unsupported: tuple[str, ...] = ()) -> types.ModuleType:
    """A pynvml stand-in with devices by UUID -> NVML index; names in ``unsupported`` raise."""
    nvml = types.ModuleType("pynvml")
    nvml.NVML_CLOCK_SM, nvml.NVML_CLOCK_MEM, nvml.NVML_TEMPERATURE_GPU = 0, 2, 0
    nvml.nvmlClocksEventReasonGpuIdle = 0x1
    nvml.nvmlClocksEventReasonSwPowerCap = 0x4
    nvml.nvmlClocksEventReasonNone = 0
    nvml.calls = []
    by_index = {index: uuid for uuid, index in devices.items()}

    def api(name, result):
        def call(*args):
            nvml.calls.append(name)
            if name in unsupported:
                raise _NVMLError(f"{name}: Not Supported")
            return result(*args) if callable(result) else result

        setattr(nvml, name, call)

    api("nvmlInit", None)
    api("nvmlShutdown", None)
    api("nvmlSystemGetDriverVersion", "580.159.03")
    api("nvmlSystemGetCudaDriverVersion", 13000)
    api("nvmlDeviceGetHandleByUUID", lambda uuid: ("handle", devices[uuid]))
    api("nvmlDeviceGetHandleByIndex", lambda index: ("handle", index) if index in by_index else _raise())
    api("nvmlDeviceGetHandleByPciBusId", lambda bus: _raise())
    api("nvmlDeviceGetClockInfo", lambda h, clock: 1980 if clock == 0 else 3201)
    api("nvmlDeviceGetMaxClockInfo", lambda h, clock: 1980 if clock == 0 else 3201)
    api("nvmlDeviceGetTemperature", lambda h, sensor: 41)
    api("nvmlDeviceGetPowerUsage", lambda h: 123456)
    api("nvmlDeviceGetEnforcedPowerLimit", lambda h: 700000)
    api("nvmlDeviceGetCurrentClocksEventReasons", lambda h: 0x4)
    api("nvmlDeviceGetUUID", lambda h: by_index[h[1]].encode())
    api("nvmlDeviceGetPciInfo", lambda h: types.SimpleNamespace(busId=b"00000000:19:00.0"))
    api("nvmlDeviceGetIndex", lambda h: h[1])
    return nvml


def _raise():
    raise _NVMLError("Not Found")


def _torch_gpu_stub(uuid: str | None):
    def stub(device_index, notes):
        return {
            "index": device_index,
            "name": "Fake H200",
            "compute_capability": "9.0",
            "sm_count": 132,
            "memory_bytes": 150_000_000_000,
            "l2_cache_bytes": 60 * 2**20,
            "uuid": uuid,
            "pci_bus_id": None,
        }

    return stub


# --------------------------------------------------------------------------- software part


@no_gpu
def test_fingerprint_without_gpu_has_software_and_notes() -> None:
    result = environment_fingerprint()
    json.dumps(result)
    assert result["python"] == ".".join(map(str, sys.version_info[:3]))
    assert result["torch"] == torch.__version__
    assert result["cuda_available"] is False
    assert set(result["gpu"]) == set(GPU_STATIC_KEYS + GPU_STATE_KEYS)
    assert all(value is None for value in result["gpu"].values())
    assert any("no GPU visible" in note for note in result["notes"])


@no_gpu
def test_gpu_state_without_gpu_is_empty_with_a_note() -> None:
    state = gpu_state(0)
    json.dumps(state)
    assert all(state[key] is None for key in GPU_STATE_KEYS)
    assert state["notes"] and isinstance(state["time"], float)


def test_fingerprint_survives_missing_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub(UUID))
    result = environment_fingerprint(0)
    json.dumps(result)
    assert result["driver_version"] is None
    assert result["gpu"]["name"] == "Fake H200"
    assert result["gpu"]["sm_clock_mhz"] is None
    assert any("pynvml not importable" in note for note in result["notes"])


def test_fingerprint_survives_nvml_init_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml({UUID: 0}, unsupported=("nvmlInit",)))
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub(UUID))
    result = environment_fingerprint(0)
    assert result["gpu"]["sm_clock_mhz"] is None
    assert any(note.startswith("NVML unavailable") for note in result["notes"])


def test_missing_nvcc_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "_find_nvcc", lambda: None)
    notes: list[str] = []
    assert fingerprint.nvcc_version(notes) is None
    assert notes == ["nvcc not found (PATH, CUDA_HOME, /usr/local/cuda)"]


def test_nvcc_version_parsed_and_timeout_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprint, "_find_nvcc", lambda: "/opt/cuda/bin/nvcc")
    monkeypatch.setattr(fingerprint, "_NVCC_SEEN", {})
    output = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"
    calls = []

    def run(*a, **k):
        calls.append(a[0])
        return subprocess.CompletedProcess(a[0], 0, stdout=output, stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    assert fingerprint.nvcc_version([]) == "13.0.88"
    assert fingerprint.nvcc_version([]) == "13.0.88"
    assert len(calls) == 1  # asked once per process and path

    def hang(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], kwargs["timeout"])

    monkeypatch.setattr(subprocess, "run", hang)
    monkeypatch.setattr(fingerprint, "_find_nvcc", lambda: "/other/cuda/bin/nvcc")
    for _ in range(2):  # the note comes back with the remembered answer
        notes: list[str] = []
        assert fingerprint.nvcc_version(notes) is None
        assert "timed out" in notes[0]


# --------------------------------------------------------------------------- NVML through a stand-in


def test_nvml_readings_and_uuid_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch device 0 is NVML device 3 (CUDA_VISIBLE_DEVICES=3): found by UUID, not index.
    other = "GPU-00000000-0000-0000-0000-000000000000"
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml({other: 0, UUID: 3}))
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub(UUID))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    result = environment_fingerprint(0)
    json.dumps(result)
    gpu = result["gpu"]
    assert (result["driver_version"], result["cuda_driver_version"]) == ("580.159.03", "13.0")
    assert (gpu["uuid"], gpu["nvml_index"], gpu["pci_bus_id"]) == (UUID, 3, "00000000:19:00.0")
    assert (gpu["sm_clock_mhz"], gpu["memory_clock_mhz"], gpu["max_sm_clock_mhz"]) == (1980, 3201, 1980)
    assert (gpu["temperature_c"], gpu["power_w"], gpu["power_limit_w"]) == (41, 123.456, 700.0)
    assert gpu["clock_event_reasons"] == ["sw_power_cap"]
    assert result["cuda_visible_devices"] == "3"


def test_nvml_falls_back_to_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml({"GPU-a": 0, "GPU-b": 1, UUID: 2}))
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub(None))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    result = environment_fingerprint(1)
    assert result["gpu"]["nvml_index"] == 2
    assert result["gpu"]["uuid"] == UUID


def test_nvml_index_fallback_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml({UUID: 0}))
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub("GPU-unknown"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    result = environment_fingerprint(0)
    assert result["gpu"]["nvml_index"] == 0
    assert any("matched by index 0 only" in note for note in result["notes"])


def test_unsupported_nvml_readings_become_none_with_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _fake_nvml({UUID: 0}, unsupported=("nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature"))
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setattr(fingerprint, "_torch_gpu", _torch_gpu_stub(UUID))
    state = gpu_state(0)
    assert state["power_w"] is None and state["temperature_c"] is None
    assert state["sm_clock_mhz"] == 1980
    assert any("power draw" in note for note in state["notes"])
    assert nvml.calls[-1] == "nvmlShutdown"


def test_torch_uuid_spelling() -> None:
    assert fingerprint._torch_uuid(types.SimpleNamespace(uuid="1234-abcd")) == "GPU-1234-abcd"
    assert fingerprint._torch_uuid(types.SimpleNamespace(uuid="GPU-1234")) == "GPU-1234"
    assert fingerprint._torch_uuid(types.SimpleNamespace(uuid="MIG-1234")) == "MIG-1234"
    assert fingerprint._torch_uuid(types.SimpleNamespace()) is None


# --------------------------------------------------------------------------- real GPU


@pytest.mark.gpu
def test_fingerprint_on_gpu_has_name_and_clocks() -> None:
    result = environment_fingerprint()
    json.dumps(result)
    gpu = result["gpu"]
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert gpu["name"] == props.name
    assert gpu["sm_count"] == props.multi_processor_count
    assert gpu["l2_cache_bytes"] == props.L2_cache_size
    assert gpu["sm_clock_mhz"] > 0 and gpu["max_sm_clock_mhz"] >= gpu["sm_clock_mhz"] * 0.9
    assert gpu["memory_clock_mhz"] > 0
    assert gpu["uuid"].startswith(("GPU-", "MIG-"))
    assert result["driver_version"] and result["torch_cuda"]
    assert not any("matched by index" in note for note in result["notes"]), result["notes"]


@pytest.mark.gpu
def test_gpu_state_on_gpu_reads_clocks() -> None:
    state = gpu_state(torch.cuda.current_device())
    assert state["sm_clock_mhz"] > 0
    assert state["temperature_c"] is not None
    assert state["power_w"] is not None and state["power_w"] > 0
