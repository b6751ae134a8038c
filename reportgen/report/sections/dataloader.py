"""Dataloading analysis (Dataloader): parallel loader processes vs cores, loading times."""

from __future__ import annotations

from reportgen.report import charts
from reportgen.report.model import Chart, Section, Text
from reportgen.report.trace_facts import dataloader_sentence, trace_facts
from reportgen.report.util import number
from reportgen.rule_outputs import DataloaderDetails, RuleOutputs
from reportgen.rulebook import RuleName
from reportgen.section_ids import SectionId


def _from_traces(section: Section, facts, lead: str) -> Section:
    """The PyTorch profiler traces' DataLoader share of step time (and the num_workers fix when due)."""
    section.add(Text(lead + dataloader_sentence(facts), tone="finding" if facts.dataloader_share >= 0.3 else "plain"))
    if facts.workers is False and facts.dataloader_share >= 0.3:
        section.add(Text("The data is loaded in the training process itself, one batch after the other: "
                         "set num_workers of the DataLoader (e.g. to the number of free cores) so that worker "
                         "processes prepare the next batches while the model trains.", tone="finding"))
    section.data = {"trace_dataloader_share": facts.dataloader_share, "iterator": facts.iterator,
                    "workers": facts.workers}
    return section


def build(outputs: RuleOutputs) -> Section:
    section = Section(SectionId.DATALOADING_ANALYSIS, "Dataloading analysis", level=3)
    rule = outputs.get(RuleName.DATALOADER)
    facts = trace_facts(outputs)
    if rule is None and facts.dataloader_share is not None:
        return _from_traces(section, facts, f"From the {facts.name}: ")
    if rule is None:
        return section.missing("No Dataloader output was found.")
    lo, hi = rule.param("min_threshold", 70), rule.param("max_threshold", 200)
    section.add(Text(
        "The number of data-loading workers strongly affects training speed. The Dataloader rule counted the "
        "data-loading processes running in parallel and compared that with the number of CPU cores: fewer "
        f"than {lo} % of the cores may starve training, more than {hi} % may slow down the rest of the "
        f"work on the CPU. It analysed {rule.datapoints} datapoints and fired {rule.triggered} times.",
        tone="finding" if rule.triggered else "plain"))
    details = DataloaderDetails.of(rule.details)
    if not details.listed and facts.dataloader_share is not None:
        return _from_traces(section, facts, "SageMaker Debugger recorded no data-loading events; the PyTorch "
                                            "profiler traces did. ")
    if not details.listed:
        return section.missing("No data-loading events were recorded for this job.")
    cores, loaders = number(details.cores), number(details.dataloaders)
    advice = []
    if cores is not None and loaders is not None:
        if loaders < cores:
            advice.append(f"The instance has {int(cores)} cores, but on average only {int(loaders)} data-loading "
                          "workers ran in parallel: consider more workers.")
        elif loaders > cores:
            advice.append(f"The instance has {int(cores)} cores, but on average {int(loaders)} data-loading "
                          "workers ran in parallel: consider fewer workers.")
    if details.pin_memory is False:
        advice.append("Pinned memory was off: setting pin_memory=True speeds up host-to-GPU copies.")
    if details.prefetch is False:
        advice.append("Data was not pre-fetched: pre-fetching overlaps loading with computation.")
    if advice:
        section.add(Text(" ".join(advice), tone="finding"))
    p25, p50, p95 = number(details.time_p25), number(details.time_p50), number(details.time_p95)
    if p50 is not None:
        section.add(Text(f"Data-loading time: median {p50:.4f} s, 95th percentile {p95 or 0:.4f} s, "
                         f"25th percentile {p25 or 0:.4f} s."))
        probs, edges = details.time_probs, details.time_binedges
        if probs is not None and edges is not None and len(edges) == len(probs) + 1:
            clip = charts.clip_edge(probs, edges)
            note = "Histogram of data-loading times; the count axis is logarithmic so rare slow loads stay visible."
            if clip is not None:
                total = sum(p for p in probs if isinstance(p, (int, float)))
                beyond = sum(p for p, e in zip(probs, edges[1:]) if isinstance(p, (int, float)) and e > clip)
                note += (f" The time axis ends at {clip:.3g} s (of {edges[-1]:.3g} s) so the bulk is visible: "
                         f"{beyond:g} of {total:g} events ({beyond / total * 100 if total else 0:.1f} %) took "
                         "longer (zoom out to see them).")
            section.add(Text(note))
            section.add(Chart("dataloading-hist", charts.histograms({"Dataloading events": (probs, edges)},
                                                                    "Data-loading times", "Data loading in [s]",
                                                                    clip_at=clip, log_y=True),
                              "Histogram (needs JavaScript); the percentiles are given in the text."))
    section.data = {"triggered": rule.triggered, "cores": cores, "dataloaders": loaders, "pin_memory": details.pin_memory,
                    "num_workers": details.num_workers, "p25": p25, "p50": p50, "p95": p95}
    return section
