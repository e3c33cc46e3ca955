// Umbrella header for optimizers, gradient clipping and learning-rate schedules.
#pragma once

#include "strata/optim/adamw.h"
#include "strata/optim/clip_grad.h"
#include "strata/optim/lr_schedule.h"
#include "strata/optim/optimizer.h"
#include "strata/optim/sgd.h"
#include "strata/optim/state_store.h"
