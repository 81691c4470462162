"""Demo news and research, written for this project (illustrative market commentary, not real reports).

Publication times are spread over the weeks before the data dir is created, newest first.
"""

from __future__ import annotations

from server.store.site.content import ContentItem, ContentKind, Localised

_HOUR = 3600.0

# title zh, title en, summary zh, summary en, tags
_NEWS: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("布伦特原油窄幅震荡，市场关注产油国会议", "Brent trades in a narrow range ahead of producer meeting",
     "布伦特原油期货在每桶 80 美元附近窄幅波动，交易商在产油国联盟会议前保持观望，库存数据对盘面影响有限。",
     "Brent futures hovered near $80 a barrel as traders waited for the producer group's meeting; "
     "inventory data did little to move prices.", ("crude", "brent", "opec")),
    ("上海原油期货夜盘收涨，人民币计价溢价扩大", "SC crude ends night session higher as yuan premium widens",
     "上海国际能源交易中心原油期货夜盘小幅收涨，相对布伦特的人民币计价溢价扩大，反映国内炼厂备货需求。",
     "Shanghai SC crude closed the night session slightly higher and its premium over Brent widened, "
     "reflecting restocking demand from domestic refiners.", ("crude", "sc", "ine")),
    ("美国原油库存意外下降，WTI 获得支撑", "Surprise US crude draw lends support to WTI",
     "最新周度数据显示美国商业原油库存意外下降，库欣地区库存同步走低，WTI 近月合约获得支撑。",
     "Weekly data showed an unexpected fall in US commercial crude stocks, with Cushing also lower, "
     "supporting the WTI front month.", ("crude", "wti", "inventory")),
    ("新加坡燃料油裂解价差走弱", "Singapore fuel oil cracks weaken",
     "高硫燃料油裂解价差连续走弱，中东货源到港增加，船加油需求平稳。",
     "High-sulphur fuel oil cracks weakened again as more Middle East cargoes arrived while bunker "
     "demand held steady.", ("refined", "fuel-oil", "singapore")),
    ("柴油出口窗口关闭，国内批发价承压", "Diesel export window shuts, domestic wholesale prices under pressure",
     "亚洲柴油裂解价差回落，国内主营炼厂出口积极性下降，部分资源回流国内市场，批发价格承压。",
     "With Asian gasoil cracks lower, refiners have less reason to export; some volumes return to the "
     "domestic market and weigh on wholesale prices.", ("refined", "gasoil", "diesel")),
    ("石脑油需求回升，裂解装置开工率提高", "Naphtha demand recovers as crackers raise run rates",
     "东北亚多套裂解装置检修结束，石脑油采购需求回升，CFR 日本价格小幅上涨。",
     "Several North Asian crackers returned from maintenance, lifting naphtha buying; CFR Japan prices "
     "edged up.", ("refined", "naphtha")),
    ("液化天然气现货价格随气温回落", "Spot LNG eases with milder weather",
     "东北亚液化天然气现货价格随气温回暖而回落，终端库存处于同期较高水平。",
     "Spot LNG in North Asia eased as temperatures rose, with terminal stocks high for the season.",
     ("gas-lpg", "lng")),
    ("华东液化气码头库存上升，价格小幅下调", "East China LPG terminal stocks rise, prices trimmed",
     "华东主要液化气码头到船集中，库存率上升，贸易商小幅下调报价以促进出货。",
     "A cluster of arrivals lifted stocks at East China LPG terminals; traders trimmed offers to move "
     "volumes.", ("gas-lpg", "lpg", "inventory")),
    ("沙特合同价公布，丙烷丁烷均有上调", "Saudi contract prices out, propane and butane both higher",
     "本月沙特液化石油气合同价公布，丙烷和丁烷价格均有上调，进口成本支撑国内液化气价格。",
     "This month's Saudi LPG contract prices were raised for both propane and butane, lifting import "
     "costs and supporting domestic prices.", ("gas-lpg", "lpg", "cp")),
    ("甲醇港口库存回落，太仓现货走强", "Methanol port stocks fall, Taicang spot firms",
     "华东港口甲醇库存环比回落，进口到港不及预期，太仓现货价格走强，基差走扩。",
     "Methanol stocks at East China ports fell week on week as imports arrived below expectations; "
     "Taicang spot firmed and the basis widened.", ("methanol", "inventory", "ports")),
    ("内蒙古甲醇装置检修，内地价格上行", "Inner Mongolia methanol outages lift inland prices",
     "西北地区多套甲醇装置计划检修，内地供应收紧，生产企业上调出厂价格。",
     "Planned outages at several methanol plants in the northwest tightened inland supply and producers "
     "raised ex-works prices.", ("methanol", "supply")),
    ("甲醇制烯烃装置负荷下降", "Methanol-to-olefins units cut rates",
     "受利润压缩影响，华东部分甲醇制烯烃装置降低负荷，甲醇需求阶段性减弱。",
     "Squeezed margins led some East China MTO units to cut rates, softening methanol demand for now.",
     ("methanol", "mto", "demand")),
    ("PTA 加工费修复，聚酯开工保持高位", "PTA processing margin recovers, polyester runs stay high",
     "PX 价格回落带动 PTA 加工费修复，下游聚酯开工率保持在较高水平，现货成交尚可。",
     "Lower PX prices restored PTA processing margins, while downstream polyester run rates stayed high "
     "and spot trade was decent.", ("aromatics", "pta", "polyester")),
    ("亚洲 PX 价格跟随原油回落", "Asian PX follows crude lower",
     "亚洲对二甲苯价格跟随原油下跌，PX 与石脑油价差收窄，部分装置计划检修。",
     "Asian paraxylene fell with crude; the PX-naphtha spread narrowed and some units plan maintenance.",
     ("aromatics", "px")),
    ("乙二醇港口库存创阶段新低", "MEG port inventories hit a multi-week low",
     "华东主港乙二醇库存继续下降，到港船货偏少，现货基差走强。",
     "MEG inventories at the main East China ports fell again on light arrivals, strengthening the "
     "spot basis.", ("aromatics", "meg", "inventory")),
    ("苯乙烯现货紧张，华东价格上涨", "Styrene spot tight, East China prices rise",
     "苯乙烯华东港口库存偏低，下游 ABS 和 EPS 需求稳定，现货价格上涨。",
     "Low styrene stocks at East China ports and stable ABS and EPS demand pushed spot prices higher.",
     ("aromatics", "styrene")),
    ("聚丙烯新装置投产，拉丝料承压", "New polypropylene capacity starts, raffia grades under pressure",
     "华南一套新建聚丙烯装置投产出合格品，拉丝料供应增加，价格承压。",
     "A new polypropylene plant in South China produced on-spec material, adding raffia supply and "
     "pressuring prices.", ("olefins", "pp", "capacity")),
    ("LLDPE 农膜需求进入旺季", "LLDPE enters peak season for agricultural film",
     "农膜生产企业开工率提升，LLDPE 膜料需求增加，石化企业库存去化加快。",
     "Agricultural film makers raised run rates, lifting LLDPE film demand and speeding up inventory "
     "draws at producers.", ("olefins", "lldpe", "demand")),
    ("进口聚乙烯报价上调，内外价差收窄", "Import PE offers raised, import arbitrage narrows",
     "中东供应商上调 CFR 中国聚乙烯报价，进口利润收窄，贸易商采购谨慎。",
     "Middle East suppliers raised CFR China polyethylene offers, narrowing import margins and making "
     "traders cautious.", ("olefins", "pe", "import")),
    ("PVC 出口订单增加，社会库存下降", "PVC export orders rise, social inventories fall",
     "印度市场需求回暖，国内 PVC 出口订单增加，华东华南社会库存连续下降。",
     "Stronger demand from India increased Chinese PVC export orders; social stocks in East and South "
     "China fell again.", ("chlor-alkali", "pvc", "export")),
    ("液碱价格分化，山东地区走弱", "Caustic soda prices diverge, Shandong weakens",
     "山东地区液碱供应增加，价格走弱；华东地区下游氧化铝需求稳定，价格维持坚挺。",
     "More caustic soda supply in Shandong softened prices there, while steady alumina demand kept East "
     "China prices firm.", ("chlor-alkali", "caustic-soda")),
    ("尿素出口政策预期升温", "Expectations build for urea export policy",
     "市场关注尿素出口政策调整，期货价格波动加大，工厂预收订单增加。",
     "The market is watching for a change in urea export policy; futures became more volatile and "
     "plants took more advance orders.", ("chlor-alkali", "urea", "policy")),
    ("人民币兑美元中间价小幅调升", "Yuan midpoint fixed slightly stronger",
     "人民币兑美元中间价小幅调升，在岸人民币交投平稳，企业结汇意愿有所增强。",
     "The yuan's midpoint against the dollar was set slightly stronger; onshore trading was steady and "
     "exporters converted more dollars.", ("fx", "usdcny")),
    ("美元指数回落，非美货币普遍上涨", "Dollar index eases, other currencies gain",
     "美元指数自高位回落，欧元和日元兑美元上涨，大宗商品进口成本随之下降。",
     "The dollar index fell from its highs, lifting the euro and the yen and lowering commodity import "
     "costs.", ("fx", "usd", "eurusd")),
    ("日元走弱，日韩石化产品出口竞争力提升", "Weaker yen boosts Japanese petrochemical export competitiveness",
     "日元兑美元走弱，日本石化产品出口报价更具竞争力，对亚洲芳烃市场形成压力。",
     "A weaker yen made Japanese petrochemical offers more competitive, weighing on Asian aromatics.",
     ("fx", "usdjpy", "aromatics")),
    ("炼厂检修季临近，成品油库存趋降", "Refinery maintenance season nears, product stocks set to fall",
     "国内多家炼厂计划进入检修，预计成品油供应阶段性收紧，社会库存趋降。",
     "Several domestic refineries plan maintenance, which should tighten product supply and lower "
     "social inventories.", ("refined", "refinery", "maintenance")),
    ("航运运费上涨推高化工品到岸成本", "Higher freight lifts delivered chemical costs",
     "中东至中国化学品船运费上涨，甲醇和乙二醇到岸成本上升，进口商报价坚挺。",
     "Higher chemical tanker rates from the Middle East to China raised delivered costs of methanol and "
     "MEG; importers held offers firm.", ("freight", "methanol", "meg")),
    ("期货交易所调整部分品种保证金", "Exchange adjusts margins on several contracts",
     "交易所公告调整部分能源化工期货合约的交易保证金比例和涨跌停板幅度，自下一交易日起执行。",
     "The exchange adjusted margin ratios and daily price limits on several energy and chemical futures, "
     "effective from the next trading day.", ("exchange", "margin", "futures")),
    ("煤制烯烃利润改善", "Coal-to-olefins margins improve",
     "动力煤价格回落，煤制烯烃装置利润改善，聚烯烃供应预期增加。",
     "Lower thermal coal prices improved coal-to-olefins margins, raising expectations of more "
     "polyolefin supply.", ("olefins", "coal", "margin")),
    ("纺织服装订单回暖，涤纶长丝去库", "Apparel orders recover, polyester filament destocks",
     "下游织造企业订单回暖，涤纶长丝工厂库存下降，产销率提升。",
     "Weaving mills received more orders; polyester filament plant inventories fell and sales-to-output "
     "ratios improved.", ("aromatics", "polyester", "demand")),
    ("华北天然气管道检修，LNG 槽车价上涨", "North China pipeline maintenance lifts trucked LNG prices",
     "华北地区天然气管道进行检修，部分城燃企业转向 LNG 槽车补充，液厂出厂价上涨。",
     "Pipeline maintenance in North China sent some city-gas distributors to trucked LNG, and plants "
     "raised ex-works prices.", ("gas-lpg", "lng", "domestic")),
    ("电石价格上涨，PVC 成本支撑增强", "Higher calcium carbide prices strengthen PVC cost support",
     "西北地区电石供应偏紧，价格上涨，电石法 PVC 成本支撑增强。",
     "Tight calcium carbide supply in the northwest lifted its price and strengthened the cost floor for "
     "carbide-based PVC.", ("chlor-alkali", "pvc", "cost")),
)

# title zh, title en, summary zh, summary en, author, category, tags
_RESEARCH: tuple[tuple[str, str, str, str, str, str, tuple[str, ...]], ...] = (
    ("原油月报：供需再平衡下的价格区间", "Crude monthly: the price range under rebalancing",
     "本报告梳理产油国政策、非产油国供应增长与需求季节性，认为未来一个季度布伦特以区间震荡为主。",
     "We review producer policy, non-OPEC supply growth and seasonal demand, and expect Brent to trade "
     "in a range over the coming quarter.", "陈志远", "crude", ("crude", "monthly")),
    ("SC 原油跨市场套利的成本框架", "A cost framework for SC crude cross-market arbitrage",
     "从运费、汇率、交割品质升贴水和仓储成本四个方面拆解 SC 与布伦特价差的合理区间。",
     "Breaks down the fair SC-Brent spread into freight, FX, delivery quality differentials and storage "
     "costs.", "陈志远", "crude", ("crude", "sc", "arbitrage")),
    ("成品油：出口配额与国内裂解价差", "Refined products: export quotas and domestic cracks",
     "分析成品油出口配额发放节奏对国内汽柴油裂解价差的影响，并给出季度展望。",
     "Analyses how the pace of export quota issuance affects domestic gasoline and diesel cracks, with a "
     "quarterly outlook.", "刘思涵", "refined", ("refined", "quota")),
    ("LNG 与 LPG：冬季需求情景分析", "LNG and LPG: winter demand scenarios",
     "基于三种气温情景测算东北亚 LNG 和国内 LPG 的冬季需求与价格弹性。",
     "Estimates North Asian LNG and domestic LPG winter demand and price sensitivity under three "
     "temperature scenarios.", "刘思涵", "gas-lpg", ("lng", "lpg", "winter")),
    ("甲醇：港口与内地价差的驱动因素", "Methanol: what drives the port-inland spread",
     "拆解进口到港、内地装置检修和 MTO 需求对港口与内地甲醇价差的影响，给出价差交易思路。",
     "Examines how imports, inland outages and MTO demand move the port-inland methanol spread, with "
     "trading ideas.", "王蕾", "methanol", ("methanol", "spread")),
    ("甲醇进口利润与伊朗装置开工跟踪", "Methanol import margins and Iranian plant run rates",
     "跟踪中东主要甲醇装置开工情况和 CFR 中国报价，评估进口利润窗口。",
     "Tracks Middle East methanol plant run rates and CFR China offers to assess the import window.",
     "王蕾", "methanol", ("methanol", "import")),
    ("聚烯烃：新产能投放周期下的利润分配", "Polyolefins: margin distribution in a capacity wave",
     "统计未来两年聚乙烯和聚丙烯新增产能，分析油制、煤制和丙烷脱氢路线的利润分化。",
     "Counts new PE and PP capacity over two years and compares margins of oil-, coal- and PDH-based "
     "routes.", "赵明", "olefins", ("pp", "pe", "capacity")),
    ("进口聚乙烯：CFR 中国价格与内外盘价差", "Imported PE: CFR China prices and the import spread",
     "从汇率、关税和增值税出发计算进口聚乙烯完税成本，比较国内外价差的历史分位。",
     "Computes the landed cost of imported PE from FX, tariff and VAT and places the current spread in "
     "its historical range.", "赵明", "olefins", ("pe", "import", "spread")),
    ("芳烃产业链：PX-PTA-聚酯利润传导", "Aromatics chain: margin transmission from PX to PTA to polyester",
     "跟踪 PX、PTA 与聚酯环节的加工利润，分析利润在产业链上的转移规律。",
     "Tracks processing margins of PX, PTA and polyester and how margin shifts along the chain.",
     "孙悦", "aromatics", ("px", "pta", "polyester")),
    ("乙二醇：库存周期与价格拐点", "MEG: the inventory cycle and price turns",
     "回顾近年乙二醇港口库存周期，提出判断价格拐点的三项领先指标。",
     "Reviews recent MEG port inventory cycles and proposes three leading indicators of price turns.",
     "孙悦", "aromatics", ("meg", "inventory")),
    ("苯乙烯：纯苯成本与下游需求", "Styrene: benzene cost and downstream demand",
     "分析纯苯价格波动对苯乙烯成本的影响，以及 EPS、PS、ABS 需求的季节性。",
     "Analyses how benzene swings feed into styrene costs and the seasonality of EPS, PS and ABS demand.",
     "孙悦", "aromatics", ("styrene", "benzene")),
    ("氯碱平衡：PVC 与烧碱的联动", "Chlor-alkali balance: how PVC and caustic soda move together",
     "从氯碱平衡出发，分析 PVC 与烧碱利润此消彼长的关系及对开工率的影响。",
     "Looks at the chlor-alkali balance: the see-saw between PVC and caustic soda margins and its effect "
     "on run rates.", "周航", "chlor-alkali", ("pvc", "caustic-soda")),
    ("尿素：农需季节与出口政策情景", "Urea: farm-demand seasons and export policy scenarios",
     "结合农业需求季节和出口政策的不同情景，测算国内尿素供需平衡。",
     "Estimates the domestic urea balance under combinations of farm-demand seasons and export policy.",
     "周航", "chlor-alkali", ("urea", "policy")),
    ("人民币汇率对化工品进口成本的影响", "How the yuan affects chemical import costs",
     "量化人民币兑美元汇率变动对甲醇、PTA、聚烯烃等进口成本和内外价差的影响。",
     "Quantifies how USD/CNY moves change import costs and spreads for methanol, PTA and polyolefins.",
     "李静", "fx", ("fx", "usdcny", "import")),
    ("季度展望：能源化工品价格驱动与风险", "Quarterly outlook: energy and chemical price drivers and risks",
     "综合原油、煤炭、天然气成本和下游需求，给出主要能源化工品的季度价格区间与风险提示。",
     "Combines crude, coal and gas costs with downstream demand to give quarterly price ranges and risks "
     "for the main energy and chemical products.", "陈志远", "crude", ("outlook", "quarterly")),
    ("船运与仓储：化工品物流成本追踪", "Shipping and storage: tracking chemical logistics costs",
     "跟踪化学品船运费、港口仓储费和内河运价，评估物流成本对区域价差的影响。",
     "Tracks chemical tanker freight, port storage fees and river freight, and their effect on regional "
     "spreads.", "李静", "methanol", ("freight", "storage")),
)

NEWS_SOURCE = "Market Desk (demo)"


def demo_items(now: float) -> list[ContentItem]:
    """News every ~17 hours and research every ~2.5 days back from the hour before `now`."""
    base = now - now % _HOUR
    news = [
        ContentItem(ContentKind.NEWS, Localised(tz, te), Localised(sz, se), base - i * 17 * _HOUR - 600 * (i % 5),
                    source=NEWS_SOURCE, tags=tags)
        for i, (tz, te, sz, se, tags) in enumerate(_NEWS)
    ]
    research = [
        ContentItem(ContentKind.RESEARCH, Localised(tz, te), Localised(sz, se), base - (i * 60 + 5) * _HOUR,
                    source="Research Desk (demo)", author=author, category=cat, tags=tags)
        for i, (tz, te, sz, se, author, cat, tags) in enumerate(_RESEARCH)
    ]
    return news + research
