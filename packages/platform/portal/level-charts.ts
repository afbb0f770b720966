/**
 * The service levels drawn with uPlot (served by the platform, like every file of the page): each window's
 * figure side by side as bars (24 hours, 7 days), and the backlog as it was read every few seconds while
 * the section is open. The figures are in a table too, as text, for screen readers; the charts only draw
 * them (aria-hidden).
 */
import type { Levels } from './page-constants.js'
import uPlot from './uplot.js'

const WINDOW_NAMES = ['24 hours', '7 days']
const HEIGHT = 200
const INK = '#1c2330'
const GRID = '#d5dae3'
/** How many backlog readings the chart keeps: ten minutes of them, read every 10 s. */
const BACKLOG_SAMPLES = 60
const BACKLOG_WINDOW_SECONDS = 300

interface BarSeries {
  label: string
  color: string
  /** -1, 0, 1: left of its window's tick, on it, right of it (two series side by side). */
  align: -1 | 0 | 1
  value(levels: Levels): number | null
}

/** A chart of the two windows' figures, as bars. */
interface BarChart {
  id: string
  /** The caption, naming the series in the order they stand in each window. */
  title: string
  unit: string
  /** The top of the scale at least (a share's is 100 %). */
  top: number
  series: BarSeries[]
}

const BAR_CHARTS: BarChart[] = [
  {
    id: 'chart-first-attempt',
    title: 'First-attempt latency (ms): p50 left, p95 right',
    unit: 'ms',
    top: 1,
    series: [
      { label: 'p50', color: '#1f5fbf', align: -1, value: (l) => l.firstAttemptP50Ms },
      { label: 'p95', color: '#8a5a00', align: 1, value: (l) => l.firstAttemptP95Ms },
    ],
  },
  {
    id: 'chart-ack-share',
    title: 'Acknowledged at the first attempt (%)',
    unit: '%',
    top: 100,
    series: [
      {
        label: 'share',
        color: '#1e7a3c',
        align: 0,
        value: (l) =>
          l.firstAttemptAckShare === null ? null : Math.round(l.firstAttemptAckShare * 1000) / 10,
      },
    ],
  },
  {
    id: 'chart-ack-to-receipt',
    title: 'Ack to receipt, p95 (ms)',
    unit: 'ms',
    top: 1,
    series: [{ label: 'p95', color: '#5a2f99', align: 0, value: (l) => l.ackToReceiptP95Ms }],
  },
]

export interface LevelCharts {
  /** Draws the windows' figures, and adds a reading of the backlog at the time given (ms). */
  update(windows: readonly [Levels, Levels], atMs: number): void
  /** Stops following the charts' width (the section was left). */
  dispose(): void
}

/** The charts, in figures appended to `into`, each as wide as its figure. */
export function levelCharts(into: HTMLElement): LevelCharts {
  const plots: { chart: BarChart | null; plot: uPlot }[] = []
  const backlog: [number[], number[]] = [[], []]
  for (const chart of BAR_CHARTS) {
    const { figure, area } = chartFigure(chart.id, chart.title)
    into.append(figure)
    plots.push({
      chart,
      plot: new uPlot(
        barOptions(chart, widthOf(area)),
        [[0, 1], ...chart.series.map(() => [null, null])],
        area,
      ),
    })
  }
  const { figure, area } = chartFigure('chart-backlog', 'Backlog (deliveries waiting) every 10 s, in UTC')
  into.append(figure)
  plots.push({ chart: null, plot: new uPlot(backlogOptions(widthOf(area)), backlog, area) })
  const dispose = () => {
    resized.disconnect()
    for (const { plot } of plots) plot.destroy()
  }
  // Observed as the window's width changes; and once, at 0 px, when the section is left.
  const resized = new ResizeObserver(() => {
    if (!into.isConnected) return dispose()
    for (const { plot } of plots) plot.setSize({ width: widthOf(plot.root.parentElement), height: HEIGHT })
  })
  resized.observe(into)
  return {
    dispose,
    update(windows, atMs) {
      for (const { chart, plot } of plots) {
        if (chart) plot.setData([[0, 1], ...chart.series.map((s) => windows.map((l) => s.value(l)))])
      }
      backlog[0].push(atMs / 1000)
      backlog[1].push(windows[0].backlog)
      if (backlog[0].length > BACKLOG_SAMPLES) for (const column of backlog) column.shift()
      const plot = plots.at(-1)?.plot
      plot?.setData(backlog, false)
      // At least the last five minutes, so that the first readings do not stretch over years.
      const [first = 0, last = 0] = [backlog[0][0], backlog[0].at(-1)]
      plot?.setScale('x', { min: Math.min(first, last - BACKLOG_WINDOW_SECONDS), max: last + 10 })
    },
  }
}

function chartFigure(id: string, caption: string): { figure: HTMLElement; area: HTMLElement } {
  const area = document.createElement('div')
  area.className = 'chart-area'
  area.setAttribute('aria-hidden', 'true')
  const figure = document.createElement('figure')
  figure.className = 'chart'
  figure.id = id
  const title = document.createElement('figcaption')
  title.textContent = caption
  figure.append(title, area)
  return { figure, area }
}

/** The width a chart may take: its figure's, so that it never widens a phone's page. */
function widthOf(element: HTMLElement | null): number {
  return Math.max(160, Math.floor(element?.clientWidth ?? 320))
}

/** The axes: x as uPlot draws it by default unless told, y with room for five digits. */
function axes(x: Pick<uPlot.Axis, 'values' | 'splits'> = {}): uPlot.Axis[] {
  const style = { stroke: INK, grid: { stroke: GRID, width: 1 }, ticks: { stroke: GRID, width: 1 } }
  return [
    { ...style, ...x },
    { ...style, size: 56 },
  ]
}

function barOptions(chart: BarChart, width: number): uPlot.Options {
  const bars = uPlot.paths.bars
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { show: false },
    scales: {
      x: { time: false, range: [-0.5, 1.5] },
      y: { range: (_u, _min, max) => [0, Math.max(chart.top, max * 1.1)] },
    },
    axes: axes({ values: (_u, splits) => splits.map((v) => WINDOW_NAMES[v] ?? ''), splits: () => [0, 1] }),
    series: [
      { label: 'window' },
      ...chart.series.map((s) => ({
        label: `${s.label} (${chart.unit})`,
        stroke: s.color,
        fill: s.color,
        width: 0,
        points: { show: false },
        ...(bars && { paths: bars({ align: s.align, size: [chart.series.length > 1 ? 0.35 : 0.5, 80] }) }),
      })),
    ],
  }
}

function backlogOptions(width: number): uPlot.Options {
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { show: false },
    // Times in UTC, as every time the portal shows.
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
    scales: {
      x: { time: true },
      y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
    },
    axes: axes(),
    series: [{}, { label: 'backlog', stroke: '#b3261e', width: 2, points: { show: true, size: 6 } }],
  }
}
