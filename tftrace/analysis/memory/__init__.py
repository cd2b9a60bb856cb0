"""Memory per allocator, from its allocation events: the peak in use, when, and what held it."""
