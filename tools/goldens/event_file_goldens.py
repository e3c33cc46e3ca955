"""Writes tests/goldens/report/summary_writer.tfevents with TensorBoard's own EventFileWriter, the
writer PyTorch's SummaryWriter wraps, building each scalar event as SummaryWriter.add_scalar does.
EventFile.BytesEqualWhatSummaryWriterWrites writes the same scalars and wall times with Strata's
writer and compares the bytes.

    python3 -m venv DIR && DIR/bin/pip install tensorboard && DIR/bin/python tools/goldens/event_file_goldens.py
"""
import glob
import os
import shutil
import tempfile
import time

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

VERSION_WALL_TIME = 1700000000.5
SCALARS = [  # tag, value, step, wall time
    ("train/loss", 2.5, 1, 1700000001.25),
    ("train/lr", 0.001, 1, 1700000001.25),
    ("train/loss", 2.25, 2, 1700000002.0),
    ("memory/step_peak_mb", 123.456, 2, 1700000002.0),
    ("cache/nvme_written_mb", 0.0, 2, 1700000002.0),
    ("val/loss", 3.0e-7, 100000, 1700009999.75),
]

out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "goldens", "report", "summary_writer.tfevents")
tmp = tempfile.mkdtemp()
real_time = time.time
time.time = lambda: VERSION_WALL_TIME  # the version event's stamp
try:
    writer = EventFileWriter(tmp)
finally:
    time.time = real_time
for tag, value, step, wall in SCALARS:
    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    event = event_pb2.Event(summary=summary)
    event.wall_time = wall
    event.step = step
    writer.add_event(event)
writer.close()
(path,) = glob.glob(os.path.join(tmp, "events.out.tfevents.*"))
shutil.copyfile(path, out)
shutil.rmtree(tmp)
print("wrote", os.path.normpath(out), os.path.getsize(out), "bytes")
