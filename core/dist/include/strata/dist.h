// Umbrella header for data-parallel training: process groups (MPI, NCCL, in-process),
// DistributedDataParallel, the ZeRO-1 optimizer and differentiable collectives.
#pragma once

#include "strata/dist/ddp.h"
#include "strata/dist/functional.h"
#include "strata/dist/process_group.h"
#include "strata/dist/zero.h"
