set terminal pngcairo size 1000,620 noenhanced
set output 'latency_cdf.png'
set title 'Forwarding latency at fixed offered loads (64-byte UDP, in-band timestamps) - CDF'
set logscale x
set xlabel 'latency (us, log scale)'
set ylabel 'share of frames at or below'
set yrange [0:1.02]
set key bottom right
set grid
plot 'latency_cdf.0.dat' using 1:2 with steps lw 2 title 'floor (generator -> sink, no DUT) @ 100 pps', \
     'latency_cdf.1.dat' using 1:2 with steps lw 2 title 'DPDK macswap (one port) @ 100 pps', \
     'latency_cdf.2.dat' using 1:2 with steps lw 2 title 'Linux forwarding (ip_forward) @ 100 pps', \
     'latency_cdf.3.dat' using 1:2 with steps lw 2 title 'XDP_REDIRECT (devmap) @ 100 pps', \
     'latency_cdf.4.dat' using 1:2 with steps lw 2 title 'XDP_TX (swapmac) @ 100 pps', \
     'latency_cdf.5.dat' using 1:2 with steps lw 2 title 'floor (generator -> sink, no DUT) @ 1000000 pps', \
     'latency_cdf.6.dat' using 1:2 with steps lw 2 title 'DPDK macswap (one port) @ 1000000 pps', \
     'latency_cdf.7.dat' using 1:2 with steps lw 2 title 'Linux forwarding (ip_forward) @ 1000000 pps', \
     'latency_cdf.8.dat' using 1:2 with steps lw 2 title 'XDP_REDIRECT (devmap) @ 1000000 pps', \
     'latency_cdf.9.dat' using 1:2 with steps lw 2 title 'XDP_TX (swapmac) @ 1000000 pps'
