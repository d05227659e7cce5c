
# The machinery, written once for the scripts of this output folder
# (op_generate --shared-module) as a module of this generator's version.
sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".")))
from msprobe_repro_0_1_0_mindtorch import DType, Device, MemoryFormat, Size, TensorSpec, Unsupported, run, msadapter, torch  # noqa: E402

if __name__ == "__main__":
    sys.exit(run(sys.modules[__name__]))

