"""CI: does the default OpenCL device build and run a one-line kernel? Exit 0 if so, 1 if not.

`.ci/run` calls this after installing liftcl; on 1 it installs the distribution's PoCL and
calls it again. Every attached device is listed with the probe's verdict and, for a device
that cannot build, the reason and the remedies.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Print every device and the default choice; 0 when the default device is usable."""
    import warnings

    import lift.devices
    from lift.errors import DeviceError, DeviceSkipped

    warnings.simplefilter("ignore", DeviceSkipped)  # every device and its verdict is listed below
    for info in lift.devices.list():
        mark = "usable" if info.usable else "UNUSABLE"
        print(f"  [{info.ctx}] {info.platform} / {info.name}: {mark}: {info.reason}")
        if info.explanation:
            print(f"        why: {info.explanation}")
    try:
        dev = lift.devices.current()
    except DeviceError as e:
        print(e)
        return 1
    print(f"default device is usable: {dev.name} ({dev.platform}, {dev.driver_version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
