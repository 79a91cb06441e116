export function InsightsPage(props: { projectId: string; reportId?: string }) {
  return <section class="page"><h1>Insights</h1><p>Project {props.projectId} {props.reportId}</p></section>;
}
