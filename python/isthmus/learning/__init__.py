"""Learners that need no simulation: the Double DQN (one network per queue, or one
shared by every switch), its settings, and the ECN queue's observation, action and
reward. The control apps (ACC) and the environments of `isthmus.rl` build on them."""
