"""msprobe-rs's in-process Python parts.

Drop-in replacements for msprobe 8.3.2's ``msprobe.core.SingleSave`` and
``msprobe.core.SingleComparator`` (reinforcement-learning data collection):
switch with ``from msprobe_rs import SingleSave, SingleComparator``; and for
``msprobe.core.config_check.ConfigChecker`` (config_check's in-training
collection): ``from msprobe_rs import ConfigChecker``; and ``ResultChange``,
what one run of ``msprobe -f pytorch result_change`` records (issue 23).

The only hard dependency is numpy. torch and MindSpore tensors are accepted
when those frameworks are installed; they are never imported by this
package (a torch tensor can only exist once the user imported torch), except
by ``ConfigChecker.apply_patches(fmk)``, which patches the framework it names,
and by ``ResultChange`` when ``msprobe -f pytorch result_change`` runs it.
"""

from .single_save import SingleSave
from .single_compare import MsprobeError, SingleComparator, find_binary
from .config_checker import ConfigChecker
from .result_change import ResultChange

__all__ = ["SingleSave", "SingleComparator", "ConfigChecker", "ResultChange", "MsprobeError", "find_binary"]
__version__ = "0.1.0"
