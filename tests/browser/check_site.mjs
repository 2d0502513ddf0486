// Drive a `synth browse` page in headless Chromium (@sparticuz/chromium, offline) and report what a reviewer sees
// after clicking a question and then one of its traces, as JSON on stdout. tests/test_browse.py checks the report
// against the dataset's own records.
// usage: node check_site.mjs PAGE.html QUESTION_ID [SCREENSHOT.png]
import chromium from "@sparticuz/chromium";
import puppeteer from "puppeteer-core";
import { pathToFileURL } from "node:url";

const [page_path, questionId, screenshot] = process.argv.slice(2);
const browser = await puppeteer.launch({
  args: chromium.args, executablePath: await chromium.executablePath(), headless: true,
  defaultViewport: { width: 1400, height: 1000 },
});
const report = { console_errors: [], page_errors: [], failed_requests: [] };
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") report.console_errors.push(m.text()); });
  page.on("pageerror", (e) => report.page_errors.push(String(e)));
  page.on("requestfailed", (r) => report.failed_requests.push(r.url()));
  await page.goto(pathToFileURL(page_path).href, { waitUntil: "load" });
  report.question_cards = await page.$$eval(".question", (ns) => ns.map((n) => n.dataset.id));
  report.trace_cards = await page.$$eval(".trace", (ns) => ns.length);
  report.trace_dots = await page.$$eval("circle.trace-dot", (ns) => ns.length);
  report.timeline_heading = await page.$eval('h2[data-label="timeline"]', (n) => n.textContent);
  report.type_tags = await page.$$eval(".question .tag:first-child", (ns) => ns.map((n) => [n.title, n.textContent]));
  await page.click(`.question[data-id="${questionId}"]`);
  report.selected = await page.$$eval(".question.selected", (ns) => ns.map((n) => n.dataset.id));
  report.highlighted_cards = await page.$$eval(".trace.hl", (ns) => ns.map((n) => n.dataset.id));
  report.highlighted_dots = await page.$$eval("circle.trace-dot.hl", (ns) => ns.map((n) => n.dataset.trace));
  report.evidence_shown = await page.$$eval("#detail .evidence", (ns) => ns.map((n) => n.textContent));
  report.detail_visible = await page.$eval("#detail", (n) => n.getBoundingClientRect().height > 0);
  report.hash = await page.evaluate(() => location.hash);
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  if (report.highlighted_cards.length) {
    const traceId = report.highlighted_cards[0];
    await page.click(`.trace[data-id="${traceId}"]`);
    report.clicked_trace = traceId;
    report.trace_used_by = await page.$$eval("#detail [data-question-link]", (ns) => ns.map((n) => n.dataset.questionLink));
    report.trace_highlighted_after_click = await page.$$eval(".trace.hl", (ns) => ns.map((n) => n.dataset.id));
  }
  const filtered = await page.$$eval("#f-medium option", (ns) => ns.map((n) => n.value).filter(Boolean));
  if (filtered.length) {
    await page.select("#f-medium", filtered[0]);
    report.medium_filter = filtered[0];
    report.visible_traces_after_filter = await page.$$eval(".trace:not(.hidden)", (ns) => ns.map((n) => n.dataset.id));
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
