"""What a node is: topology (cpus), environment (the facts `manybench info` prints, collected
on each node), peaks (theoretical figures from cpu_peak and memory_peak), info (the text)."""
