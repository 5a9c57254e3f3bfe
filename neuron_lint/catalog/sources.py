"""The public pages behind each rule's facts.

A rule's ``source`` names the facts it rests on the way its authors filed them: sections of a
TorchNeuron facts digest (``§0`` to ``§9``), sections of a legacy-XLA mapping (``§A`` to ``§M``,
sources ``S1``...), PyTorch source files, and URLs. Those digests are not shipped, so a rule page
shows the public pages instead: this module maps each section and source number to the official
pages the facts in it cite (the digests' own citations), and keeps every URL the text names.
"""

from __future__ import annotations

import re

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/"
SDK = "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/"
PYTORCH_SOURCE = "https://github.com/pytorch/pytorch/blob/v2.13.0/"

IDX = DOCS + "torch/index.html"
ABOUT = DOCS + "torch/about-pytorch-neuron.html"
BP = DOCS + "torch/reference/best-practices-pytorch-neuron.html"
CREF = DOCS + "torch/compile/reference-torch-compile.html"
CABOUT = DOCS + "torch/compile/about-torch-compile.html"
COPT = DOCS + "torch/compile/how-to-optimize-with-torch-compile.html"
ENV = DOCS + "torch/reference/env-vars.html"
DIST = DOCS + "torch/guides/torch-distributed.html"
DTUT = DOCS + "torch/tutorials/tutorial-torch-distributed.html"
RN = DOCS + "release-notes/components/torchneuron.html"
TS = DOCS + "torch/troubleshooting.html"
MEMREF = DOCS + "torch/reference/guidelines-memory-management.html"
MEMG = DOCS + "torch/guides/memory-profiling-guide.html"
PROF = DOCS + "tools/neuron-explorer/how-to-profile-pytorch.html"
NKI = DOCS + "torch/guides/how-to-work-with-nki.html"
HFTUT = DOCS + "torch/tutorials/tutorial-hf-inference-torch-compile.html"
QS = DOCS + "torch/get-started/quickstart-torch-neuron.html"
APIREF = DOCS + "torch/reference/api/index.html"
TRAIN = DOCS + "training.html"
RES = DOCS + "torch/reference/torchneuron-resources.html"
GHREL = "https://github.com/aws-neuron/torch-neuronx/releases/tag/v2.33.0"
ACCELERATOR = "https://docs.pytorch.org/docs/stable/accelerator.html"
XLA_TRAINING_END = DOCS + "about-neuron/announcements/neuron2.x/announce-no-support-pytorch-xla-training.html"

#: Sections of the TorchNeuron facts: the official pages their facts cite.
FACT_SECTIONS: dict[str, tuple[str, ...]] = {
    "0": (RN, GHREL, APIREF),  # the launch: release notes, release, API compatibility matrix
    "1": (IDX, ABOUT, MEMG, TS),
    "2": (IDX, CREF, CABOUT, COPT, ENV),
    "3": (DIST, DTUT, TRAIN),
    "4": (IDX, APIREF),
    "4a": (IDX, MEMG, PROF, NKI, CREF, XLA_TRAINING_END),
    "4b": (MEMREF, ENV),
    "4c": (BP, APIREF),
    "5": (APIREF,),
    "6": (HFTUT, TRAIN, RES),
    "7": (RN, GHREL, QS),
    "8": (ACCELERATOR, "https://docs.pytorch.org/docs/stable/amp.html"),
}

#: Official sources of the legacy-XLA mapping, by number.
XLA_SOURCES: dict[str, str] = {
    "S1": IDX, "S2": ABOUT, "S3": DOCS + "training/index.html", "S4": DOCS + "setup/troubleshooting.html",
    "S5": DIST, "S6": DTUT, "S7": CREF, "S8": COPT, "S9": ENV, "S10": BP, "S11": TS, "S12": PROF,
    "S13": SDK + "about-neuron/announcements/neuron2.x/announce-eos-pytorch-profiling-api.rst",
    "S14": XLA_TRAINING_END,
    "S15": SDK + "about-neuron/announcements/neuron2.x/announce-maintenance-pytorch-xla-inference.rst",
    "S16": DOCS + "archive/frameworks/torch/inference-torch-neuronx.html",
    "S17": SDK + "frameworks/torch/index.rst",
    "S18": "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.33.0/release-notes/components/index.html",
    "S19": RN,
    "S20": SDK + "frameworks/torch/pytorch-native-overview.rst",
    "S21": SDK + "frameworks/torch/about/index.rst",
    "S22": SDK + "archive/nxd-training/pytorch-neuron-programming-guide.rst",
    "S23": DOCS + "about-neuron/appnotes/torch-neuronx/migration-from-xla-downcast-bf16.html",
    "S24": SDK + "about-neuron/announcements/neuron2.x/announce-eos-xla-bf16.rst",
    "S25": DOCS + "neuron-runtime/api/nrt-env-var-reference.html",
    "S26": DOCS + "training/torchtitan/troubleshooting.html",
    "S27": DOCS + "_sources/training/torchtitan/about-torchtitan-neuron.rst",
    "S28": TRAIN, "S28a": SDK + "about-neuron/announcements/neuron2.x/announce-transition-pytorch-trainium.rst",
    "S28b": RES,
    "S29": SDK + "about-neuron/announcements/neuron2.x/announce-eos-nxdt-nxd-core-training.rst",
    "S30": DOCS + "vllm-neuron/docs/guides/how-to-choose-compilation-route.html",
    "S31": DOCS + "vllm-neuron/docs/design/compilation/how_vllm_is_integrated_with_torchneuron.html",
    "S32": HFTUT, "S33": DOCS + "vllm-neuron/docs/getting-started/migration-nxdi-to-vllm-neuron.html",
    "S34": MEMREF, "S35": "https://github.com/aws-neuron/torch-neuronx/blob/main/README.md",
    "S36": CABOUT, "S37": DOCS + "frameworks/torch/torch-neuronx/api-reference-guide/training/torch-neuron-envvars.html",
    "S38": DOCS + "general/appnotes/neuronx-cc/neuronx-cc-training-mixed-precision.html",
    "S39": DOCS + "about-neuron/announcements/neuron2.x/announce-eos-torch-neuronx-nki-jit.html",
    "S40": "https://awsdocs-neuron.readthedocs-hosted.com/en/v1.12.0/libraries/neuronx-distributed/save_load_developer_guide.html",
    "S41": DOCS + "_sources/archive/nxd-training/nxd-training-tp-appnote.rst",
    "X2": "https://github.com/pytorch/xla/tree/41398bf",
}

#: Sections of the legacy-XLA mapping: the official sources their rows cite.
XLA_SECTIONS: dict[str, tuple[str, ...]] = {
    "A": ("S1", "S3", "S14", "S19", "S20", "S28a"),
    "B": ("S1", "S2", "S4", "S22"),
    "C": ("S1", "S2", "S7", "S8", "S9", "S36"),
    "D": ("S1", "S20", "S22", "S23", "S38"),
    "E": ("S5", "S1", "S3", "S6", "S26", "S27"),
    "F": ("S5", "X2"),
    "G": ("S22", "S40"),
    "H": ("S12", "S13", "S34"),
    "I": ("S25", "S5", "S26", "S34"),
    "J": ("S30", "S31", "S32", "S33", "S39", "S16"),
    "K": ("S27", "S29", "S5", "S1"),
    "L": ("S28", "S28b", "S30", "S32"),
    "M": ("S7", "S10", "S20"),
}

_NAMED = {"torchneuron-ops.tsv": (APIREF,), "NKI guide": (NKI,), "PROF page": (PROF,)}
_TOKEN = re.compile(
    r"https?://[^\s,;)\"'`]+"                   # a URL
    r"|§(\d+[a-z]?|[A-M])\b"                    # a section of either digest
    r"|\b(S\d+[ab]?|X2)\b"                      # a numbered source of the XLA mapping
    r"|torch 2\.13 `([\w/.-]+\.py)`"            # a PyTorch source file
    r"|(torchneuron-ops\.tsv|NKI guide|PROF page)"
)


def references(source: str) -> list[str]:
    """The public URLs behind a rule's ``source`` text, in the order it names them, without repeats."""
    found: list[str] = []
    for m in _TOKEN.finditer(source):
        section, number, pyfile, named = m.groups()
        if m.group(0).startswith("http"):
            found.append(m.group(0).rstrip("."))
        elif section:
            if section[0].isdigit():
                found.extend(FACT_SECTIONS.get(section, FACT_SECTIONS.get(section[:1], ())))
            else:
                found.extend(XLA_SOURCES[s] for s in XLA_SECTIONS.get(section, ()))
        elif number:
            if number in XLA_SOURCES:
                found.append(XLA_SOURCES[number])
        elif pyfile:
            found.append(PYTORCH_SOURCE + pyfile)
        elif named:
            found.extend(_NAMED[named])
    return list(dict.fromkeys(found))
