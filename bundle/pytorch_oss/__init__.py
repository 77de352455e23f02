"""A bundle as PyTorch OSS benchmark records and back (docs/pytorch-oss.md): writing (a bundle as records),
reading (records as one run's bundle), metrics (which mpsbench metric a record is) and kernels (the kernels
breakdowns the records carry)."""
