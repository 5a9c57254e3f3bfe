from .core.xla_model import get_local_ordinal, get_ordinal, xrt_world_size


def world_size():
    return xrt_world_size()


def global_ordinal():
    return get_ordinal()


def local_ordinal():
    return get_local_ordinal()
