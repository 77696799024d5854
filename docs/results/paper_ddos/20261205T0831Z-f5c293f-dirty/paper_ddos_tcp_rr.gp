# paper_ddos_tcp_rr: TCP_RR transactions/s under a UDP flood to a closed port
# written by xdplab.testbed.experiment_report; reproduce with: gnuplot paper_ddos_tcp_rr.gp
set terminal pngcairo size 1400,900 noenhanced font "DejaVu Sans,14" linewidth 1.5
set output "paper_ddos_tcp_rr.png"
set encoding utf8
set title "TCP_RR transactions/s under a UDP flood to a closed port" font ",18"
set xlabel "Attack rate (Mpps offered)"
set ylabel "TCP_RR transactions/s (mean of four 3-s samples)"
set grid xtics ytics mytics lt 1 lc rgb '#dcdcdc' lw 1, lt 1 lc rgb '#f0f0f0' lw 1
set border 3 lw 1.2
set tics nomirror out
set bars small
set pointsize 1.6
set key vertical Left reverse samplen 3 spacing 1.3 width -1
set xrange [0:5]
set yrange [0:*]
set offsets 0, 0, graph 0.05, 0
set label 1 "ours: AMD EPYC, kernel 6.18.44-fc-v1252, veth-dut0 (veth), generator xdp_live" at screen 0.012, screen 0.0532 left font ",14" tc rgb '#333333'
set label 2 "paper (dashed): Xeon E5-1650 v4, ConnectX-5 Ex 100G, kernel bpf-next 4.17-rc7, DPDK 18.05" at screen 0.012, screen 0.0177 left font ",14" tc rgb '#333333'
set key at screen 0.012, screen 0.2187 left top maxrows 4
set bmargin at screen 0.3192
set tmargin at screen 0.9113
plot "paper_ddos_tcp_rr.dat" index 0 using 1:2:3:4 with yerrorlines lc rgb '#1f5fbf' lw 2.5 dt 1 pt 5 title "XDP filter (drop the port, cpumap the rest)", \
     "paper_ddos_tcp_rr.dat" index 1 using 1:2:3:4 with yerrorlines lc rgb '#56a0f0' lw 2.5 dt 1 pt 7 title "xdp-tools xdp-filter (port drop)", \
     "paper_ddos_tcp_rr.dat" index 2 using 1:2:3:4 with yerrorlines lc rgb '#8c6d1f' lw 2.5 dt 1 pt 9 title "control (flood to a sink, not the DUT)", \
     "paper_ddos_tcp_rr.dat" index 3 using 1:2:3:4 with yerrorlines lc rgb '#17a2b8' lw 2.5 dt 1 pt 11 title "none (the stack drops: UdpNoPorts)", \
     "paper_ddos_tcp_rr.ref.dat" index 0 using 1:2 with linespoints lc rgb '#1f5fbf' lw 2 dt (8,5) pt 4 title "paper: XDP (paper) (E5-1650 v4, ConnectX-5)", \
     "paper_ddos_tcp_rr.ref.dat" index 1 using 1:2 with linespoints lc rgb '#17a2b8' lw 2 dt (8,5) pt 10 title "paper: no XDP (paper) (E5-1650 v4, ConnectX-5)", \
     NaN with lines lc rgb '#ffffff' title ' ', \
     NaN with lines lc rgb '#ffffff' title ' '
