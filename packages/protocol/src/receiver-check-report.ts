/** A receiver check's report as its text shows it: the fields of ReceiverCheckReportSchema it reads. */
export interface DescribedCheckReport {
  url: string
  keyVersion: number
  passed: boolean
  items: readonly {
    id: string
    severity: 'failure' | 'warning'
    passed: boolean
    expected: string
    evidence: string
  }[]
}

const VERDICT = { pass: 'PASS', fail: 'FAIL', warn: 'WARN' } as const

/**
 * The report as lines of text, as the CLIs print it: each item's verdict (PASS, FAIL, or WARN for a
 * warning item that did not pass) with what was expected and what came back, then the check's verdict.
 */
export function describeCheckReport(report: DescribedCheckReport): string[] {
  const lines = report.items.flatMap((item) => {
    const verdict = item.passed ? VERDICT.pass : item.severity === 'warning' ? VERDICT.warn : VERDICT.fail
    return [`${verdict}  ${item.id}: ${item.expected}`, `      ${item.evidence}`]
  })
  const failed = report.items.filter((item) => !item.passed && item.severity === 'failure')
  const verdict = report.passed
    ? `The receiver at ${report.url} passed the check (key version ${report.keyVersion}).`
    : `The receiver at ${report.url} failed ${failed.length} of the check's items: ${failed.map((item) => item.id).join(', ')}.`
  return [...lines, '', verdict]
}
