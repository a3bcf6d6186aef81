"""Decision making: RL schedules, GFlowNets, evolution, social choice by queries.

One subpackage per paper; see ``icml26.registry`` for the list."""
