"""Fingerprint parsing on outputs recorded on real machines (tests/fixtures/*/SOURCES.md), and build channels."""

from __future__ import annotations

from pathlib import Path

from bundle.schema import Machine
from collector.fingerprint import linux, macos, run_warnings
from collector.fingerprint.build import current_build, library_versions, pytorch_env

MAC = Path(__file__).parent / "fixtures" / "macos"
LINUX = Path(__file__).parent / "fixtures" / "linux"


def mac(name: str) -> str:
    return (MAC / name).read_text()


def test_gpu_name_and_cores_from_system_profiler():
    assert macos.parse_displays(mac("system_profiler_displays_m1pro.json")) == ("Apple M1 Pro", 16)
    # M1: _name is the raw "kHW_AppleM1Item"; the marketing name is sppci_model
    assert macos.parse_displays(mac("system_profiler_displays_m1.json")) == ("Apple M1", 7)
    assert macos.parse_displays("") == (None, None) and macos.parse_displays("{}") == (None, None)


def test_sysctl_fields():
    hw = macos.parse_sysctl(mac("sysctl_hw_m1pro.txt"))
    assert hw["hw.perflevel0.physicalcpu"] == "8" and hw["hw.perflevel1.physicalcpu"] == "2"
    air = macos.parse_sysctl(mac("sysctl_kern_hw_m1_air.txt"))
    assert air["kern.osproductversion"] == "14.4.1" and air["hw.memsize"] == "17179869184"
    assert macos.parse_machine({"sysctl": mac("sysctl_hw_model_mac14_3.txt")})["hw_model"] == "Mac14,3"
    m2 = macos.parse_sysctl(mac("sysctl_machdep_memsize_m2.txt"))
    assert m2["machdep.cpu.brand_string"] == "Apple M2"


def test_power_source():
    assert macos.parse_power_source(mac("m3max_pmset_batt.txt")) == "battery"
    assert macos.parse_power_source(mac("pmset_batt_ac_laptop.txt")) == "ac"
    assert macos.parse_power_source(mac("pmset_batt_ac_desktop.txt")) == "ac"
    assert macos.parse_power_source("") is None


def test_low_power_mode_old_and_new_keys():
    assert macos.parse_low_power_mode(mac("pmset_g_lowpowermode_off.txt")) is False
    assert macos.parse_low_power_mode(mac("pmset_g_powermode_0.txt")) is False
    on = mac("pmset_g_powermode_0.txt").replace("powermode            0", "powermode            1")
    assert macos.parse_low_power_mode(on) is True
    high = mac("pmset_g_powermode_0.txt").replace("powermode            0", "powermode            2")
    assert macos.parse_low_power_mode(high) is False  # 2 = High Power Mode
    assert macos.parse_low_power_mode("System-wide power settings:\nCurrently in use:\n standby 1\n") is None


def test_thermal_state():
    # Apple silicon: pmset records nothing at all, which is not evidence of "nominal"
    assert macos.parse_thermal_state(mac("pmset_therm_apple_silicon.txt")) is None
    assert macos.parse_thermal_state(mac("pmset_therm_intel_cpu_power.txt")) == "nominal"
    limited = macos.parse_thermal_state(mac("pmset_thermlog_throttled.txt"))
    assert limited.startswith("cpu limited") and "CPU_Speed_Limit=28" in limited
    assert macos.parse_thermal_state("") is None


def test_whole_machine_from_recorded_outputs():
    fields = macos.parse_machine(
        {
            "brand": mac("m3max_sysctl_brand.txt"),
            "sw_vers": mac("m3max_sw_vers.txt"),
            "batt": mac("m3max_pmset_batt.txt"),
            "sysctl": mac("sysctl_hw_m1pro.txt"),
            "displays": mac("system_profiler_displays_m1pro.json"),
            "pmset": mac("pmset_g_powermode_0.txt"),
            "therm": mac("pmset_therm_apple_silicon.txt"),
        }
    )
    m = Machine(name="test", os="macOS", **fields)
    assert m.chip == "Apple M3 Max" and m.os_version == "14.4" and m.power_source == "battery"
    assert (m.cpu_p_cores, m.cpu_e_cores, m.gpu_cores) == (8, 2, 16)
    assert m.low_power_mode is False and m.thermal_state is None and m.memory_bytes is None


def test_os_version_falls_back_to_sysctl_and_sw_vers_catalina():
    air = macos.parse_machine({"sysctl": mac("sysctl_kern_hw_m1_air.txt")})
    assert air["os_version"] == "14.4.1" and air["memory_bytes"] == 17179869184 and air["cpu_p_cores"] is None
    assert macos.parse_sw_vers(mac("sw_vers_catalina.txt")) == "10.15.5"


def test_missing_outputs_are_none_never_guesses():
    fields = macos.parse_machine({})
    assert all(v is None for v in fields.values())


def test_battery_and_low_power_give_run_warnings():
    m = Machine(name="x", os="macOS", power_source="battery", low_power_mode=True, thermal_state="cpu limited x")
    text = " ".join(run_warnings(m))
    assert "battery" in text and "Low Power Mode" in text and "thermal" in text
    assert run_warnings(Machine(name="x", os="macOS", power_source="ac", low_power_mode=False)) == []


def test_linux_parsers():
    assert linux.parse_cpuinfo((LINUX / "cpuinfo_xeon_vm.txt").read_text()) == "Intel(R) Xeon(R) Processor"
    assert linux.parse_meminfo((LINUX / "meminfo_vm.txt").read_text()) > 1 << 30
    assert linux.parse_os_release((LINUX / "os_release_debian12.txt").read_text()).startswith("Debian")
    assert linux.parse_nvidia_smi((LINUX / "nvidia_smi_h100nvl.csv").read_text()) == "NVIDIA H100 NVL"
    assert linux.parse_nvidia_smi("") is None


def test_current_build_records_this_torch(monkeypatch):
    import torch

    monkeypatch.setenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    b = current_build("0.1.0", "python -m collector run")
    assert b.torch_version == torch.__version__ and b.git_hash == torch.version.git_version
    assert b.env["PYTORCH_ENABLE_MPS_FALLBACK"] == "1" and b.python_version.count(".") == 2
    assert pytorch_env({"PATH": "/bin", "PYTORCH_X": "y"}) == {"PYTORCH_X": "y"}


def test_build_records_the_installed_library_versions():
    import importlib.metadata

    import transformers

    assert library_versions(("transformers", "no-such-distribution-mpsbench")) == {
        "transformers": transformers.__version__
    }
    recorded = current_build("0.1.0").libraries
    assert recorded["transformers"] == transformers.__version__
    assert recorded["diffusers"] == importlib.metadata.version("diffusers")
