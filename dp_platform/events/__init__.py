"""Event generators (event level and the paper's datasets) and the real-data loader."""

from dp_platform.events.campaign import generate_campaign
from dp_platform.events.facebook import facebook_dataset
from dp_platform.events.files import EventFiles, write_events
from dp_platform.events.model import ConversionSet, EventSet
from dp_platform.events.paper import PAPER_DATASETS, paper_dataset

__all__ = [
    "PAPER_DATASETS",
    "ConversionSet",
    "EventFiles",
    "EventSet",
    "facebook_dataset",
    "generate_campaign",
    "paper_dataset",
    "write_events",
]
