# paper_drop_mpps: Virtual lab: Packet drop rate by number of DUT cores (64-byte UDP, one flow per core)
# written by xdplab.testbed.experiment_report; reproduce with: gnuplot paper_drop_mpps.gp
set terminal pngcairo size 1400,900 noenhanced font "DejaVu Sans,14" linewidth 1.5
set output "paper_drop_mpps.png"
set encoding utf8
set title "Virtual lab: Packet drop rate by number of DUT cores (64-byte UDP, one flow per core)" font ",18"
set xlabel "DUT cores (receive queues)"
set ylabel "Drop rate (Mpps; median, bars min-max)"
set grid xtics ytics mytics lt 1 lc rgb '#dcdcdc' lw 1, lt 1 lc rgb '#f0f0f0' lw 1
set border 3 lw 1.2
set tics nomirror out
set bars small
set pointsize 1.6
set key vertical Left reverse samplen 3 spacing 1.3 width -1
set logscale y
set format y '%g'
set yrange [1.39955:150.09]
set ytics (2, 5, 10, 20, 50, 100)
set mytics 10
set xtics 1 format '%g'
set mxtics 1
set xrange [0.5:6.5]
set label 1 "ours: AMD EPYC, kernel 6.18.44-fc-v657, veth-dut0 (veth), generator xdp_live" at screen 0.012, screen 0.0532 left font ",14" tc rgb '#333333'
set label 2 "paper (dashed): Xeon E5-1650 v4, ConnectX-5 Ex 100G, kernel bpf-next 4.17-rc7, DPDK 18.05" at screen 0.012, screen 0.0177 left font ",14" tc rgb '#333333'
set key at screen 0.012, screen 0.2187 left top maxrows 4
set bmargin at screen 0.3192
set tmargin at screen 0.9113
plot "paper_drop_mpps.dat" index 0 using 1:2:3:4 with yerrorlines lc rgb '#1f5fbf' lw 2.5 dt 1 pt 5 title "xdp, no_touch", \
     "paper_drop_mpps.dat" index 1 using 1:2:3:4 with yerrorlines lc rgb '#56a0f0' lw 2.5 dt 1 pt 7 title "xdp, read", \
     NaN with lines lc rgb '#ffffff' title ' ', \
     NaN with lines lc rgb '#ffffff' title ' ', \
     "paper_drop_mpps.ref.dat" index 0 using 1:2 with linespoints lc rgb '#1f5fbf' lw 2 dt (8,5) pt 4 title "paper: XDP drop (E5-1650 v4, ConnectX-5)", \
     "paper_drop_mpps.ref.dat" index 1 using 1:2 with linespoints lc rgb '#d62728' lw 2 dt (8,5) pt 10 title "paper: DPDK rxonly (E5-1650 v4, ConnectX-5)", \
     "paper_drop_mpps.ref.dat" index 2 using 1:2 with linespoints lc rgb '#8e44ad' lw 2 dt (8,5) pt 12 title "paper: Linux raw drop (E5-1650 v4, ConnectX-5)", \
     "paper_drop_mpps.ref.dat" index 3 using 1:2 with linespoints lc rgb '#c774e8' lw 2 dt (8,5) pt 14 title "paper: Linux conntrack drop (E5-1650 v4, ConnectX-5)"
