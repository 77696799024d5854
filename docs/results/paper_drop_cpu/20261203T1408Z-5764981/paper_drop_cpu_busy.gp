# paper_drop_cpu_busy: DUT CPU usage by offered load (one core, 64-byte UDP, packets dropped)
# written by xdplab.testbed.experiment_report; reproduce with: gnuplot paper_drop_cpu_busy.gp
set terminal pngcairo size 1400,900 noenhanced font "DejaVu Sans,14" linewidth 1.5
set output "paper_drop_cpu_busy.png"
set encoding utf8
set title "DUT CPU usage by offered load (one core, 64-byte UDP, packets dropped)" font ",18"
set xlabel "Offered load (Mpps, log scale)"
set ylabel "CPU busy (% of the DUT core; median, bars min-max)"
set grid xtics ytics mytics lt 1 lc rgb '#dcdcdc' lw 1, lt 1 lc rgb '#f0f0f0' lw 1
set border 3 lw 1.2
set tics nomirror out
set bars small
set pointsize 1.6
set key vertical Left reverse samplen 3 spacing 1.3 width -1
set logscale x
set xtics (0.25, 0.5, 1, 2, 3, 5, 10, 15, 20)
set xrange [0.2:31]
set yrange [0:105]
set label 1 "ours: Intel(R) Xeon(R) Processor, kernel 6.18.44-fc-v1045, veth-dut0 (veth), generator xdp_live" at screen 0.012, screen 0.0532 left font ",14" tc rgb '#333333'
set label 2 "paper (dashed): Xeon E5-1650 v4, ConnectX-5 Ex 100G, kernel bpf-next 4.17-rc7, DPDK 18.05" at screen 0.012, screen 0.0177 left font ",14" tc rgb '#333333'
set key at screen 0.012, screen 0.1892 left top maxrows 3
set bmargin at screen 0.2896
set tmargin at screen 0.9113
plot "paper_drop_cpu_busy.dat" index 0 using 1:2:3:4 with yerrorlines lc rgb '#1f5fbf' lw 2.5 dt 1 pt 5 title "XDP", \
     "paper_drop_cpu_busy.dat" index 1 using 1:2:3:4 with yerrorlines lc rgb '#d62728' lw 2.5 dt 1 pt 7 title "DPDK rxonly (vector RX)", \
     "paper_drop_cpu_busy.dat" index 2 using 1:2:3:4 with yerrorlines lc rgb '#8e44ad' lw 2.5 dt 1 pt 9 title "Linux (raw table drop)", \
     "paper_drop_cpu_busy.ref.dat" index 0 using 1:2 with linespoints lc rgb '#1f5fbf' lw 2 dt (8,5) pt 4 title "paper: XDP drop (E5-1650 v4, ConnectX-5)", \
     "paper_drop_cpu_busy.ref.dat" index 1 using 1:2 with linespoints lc rgb '#8e44ad' lw 2 dt (8,5) pt 8 title "paper: Linux drop (E5-1650 v4, ConnectX-5)", \
     NaN with lines lc rgb '#ffffff' title ' '
