/* uPlot, the chart library, as the portal loads it: portal-page.ts serves its ES module from its package. */
import uPlot from 'uplot'
export default uPlot
